# trajgate: build in one stage, run the compiled output as a non-root user in another.
# Config and certificates are mounted, the journal lives on a volume:
#   docker run -p 8080:8080 -p 127.0.0.1:8082:8082 \
#     -v ./config:/etc/trajgate:ro -v ./certs:/etc/trajgate/certs:ro -v trajgate-data:/var/lib/trajgate \
#     trajgate start --config /etc/trajgate/trajgate.yaml

FROM node:20-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
RUN npm run build && npm prune --omit=dev

FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /src/package.json ./
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/dist ./dist
COPY config/trajgate.example.yaml ./config/
RUN mkdir -p /etc/trajgate /var/lib/trajgate && chown node:node /var/lib/trajgate
USER node
VOLUME ["/var/lib/trajgate"]
WORKDIR /var/lib/trajgate
EXPOSE 8080 8081 8082
ENTRYPOINT ["node", "--max-semi-space-size=8", "--single-threaded-gc", "/app/dist/cli/main.js"]
CMD ["start", "--config", "/etc/trajgate/trajgate.yaml"]
