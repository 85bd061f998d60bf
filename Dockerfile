# trajgate: build in one stage, run the compiled output as a non-root user in another.
# The default config is config/trajgate.docker.yaml (listeners on 0.0.0.0 inside); mount your
# own at /etc/trajgate/trajgate.yaml. The journal goes to the /var/lib/trajgate volume
# (TRAJGATE_DATA: relative journal paths resolve there). Publish the admin port on loopback:
#   docker build -t trajgate .
#   docker run -e AGENT_1_TOKEN -p 8080:8080 -p 127.0.0.1:8082:8082 \
#     -v ./certs:/etc/trajgate/certs:ro -v trajgate-data:/var/lib/trajgate trajgate
# compose.yaml runs it beside an agent container.

FROM node:20-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.hook.json ./
COPY src ./src
RUN npm run build && npm prune --omit=dev

FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /src/package.json ./
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/dist ./dist
COPY bin ./bin
COPY config/trajgate.example.yaml ./config/
COPY config/trajgate.docker.yaml /etc/trajgate/trajgate.yaml
# `trajgate` on the PATH for `docker exec … trajgate sessions`; the workspace exists (start
# refuses a missing one) and a volume mounted there starts owned by node. The gateway runs as
# node (uid 1000): a CA made on the host must be readable by that uid (docs/deploy.md).
RUN chmod +x /app/bin/trajgate.cjs && ln -s /app/bin/trajgate.cjs /usr/local/bin/trajgate \
  && mkdir -p /var/lib/trajgate /workspace && chown node:node /var/lib/trajgate /workspace
ENV TRAJGATE_DATA=/var/lib/trajgate
USER node
VOLUME ["/var/lib/trajgate"]
WORKDIR /var/lib/trajgate
EXPOSE 8080 8081 8082
# Liveness from the admin listener's unauthenticated /healthz (it listens after the proxy and
# the bridge). The image has no curl, so Node asks; a config that moves the admin listener sets
# TRAJGATE_HEALTHZ to its URL (docs/deploy.md's replicas do).
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch(process.env.TRAJGATE_HEALTHZ || 'http://127.0.0.1:8082/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# Run as a program, not as `node …`: its first line carries the Node flags (bin/trajgate.cjs).
ENTRYPOINT ["/app/bin/trajgate.cjs"]
CMD ["start", "--config", "/etc/trajgate/trajgate.yaml"]
