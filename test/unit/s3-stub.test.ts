import {
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { s3Client, startS3Stub } from '../helpers/s3-stub.js';
import { REAL_PAIR as REAL } from '../helpers/sigv4-verify.js';

describe('the S3 stub, driven by @aws-sdk/client-s3', () => {
  it('stores, returns and lists objects signed with its key', async () => {
    const stub = await startS3Stub(REAL);
    const s3 = s3Client(stub.endpoint, REAL);
    const body = 'hello, stub: café ✓\n';
    await s3.send(new PutObjectCommand({ Bucket: 'tests', Key: 'dir/a b.txt', Body: body }));
    await s3.send(new PutObjectCommand({ Bucket: 'tests', Key: 'other.txt', Body: 'x' }));
    expect(stub.objects.get('tests/dir/a b.txt')?.toString('utf8')).toBe(body);
    const got = await s3.send(new GetObjectCommand({ Bucket: 'tests', Key: 'dir/a b.txt' }));
    expect(await got.Body?.transformToString('utf8')).toBe(body);
    const listed = await s3.send(new ListObjectsV2Command({ Bucket: 'tests', Prefix: 'dir/' }));
    expect(listed.Contents?.map((c) => [c.Key, c.Size])).toEqual([
      ['dir/a b.txt', Buffer.byteLength(body)],
    ]);
    expect(listed.KeyCount).toBe(1);
    expect(stub.seen.map((s) => s.problem)).toEqual([null, null, null, null]);
    s3.destroy();
  });

  it('answers 403 SignatureDoesNotMatch to a wrong secret or an unknown key id', async () => {
    const stub = await startS3Stub(REAL);
    for (const wrong of [
      { ...REAL, secretAccessKey: 'wrongSecret/Key+0123456789abcdefghijklm' },
      { ...REAL, accessKeyId: 'AKIAOTHERKEY01234567' },
    ]) {
      const s3 = s3Client(stub.endpoint, wrong);
      const put = s3.send(new PutObjectCommand({ Bucket: 'tests', Key: 'k', Body: 'x' }));
      const err = await put.then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(S3ServiceException);
      expect((err as S3ServiceException).name).toBe('SignatureDoesNotMatch');
      expect((err as S3ServiceException).$metadata.httpStatusCode).toBe(403);
      s3.destroy();
    }
    expect(stub.objects.size).toBe(0);
    expect(stub.seen.map((s) => s.problem)).toEqual([
      'SignatureDoesNotMatch',
      'unknown access key AKIAOTHERKEY01234567',
    ]);
  });
});
