// The S3-protocol server of the s3:// tests: @20minutes/s3rver on loopback, which checks every
// signed request's AWS Signature Version 4 against the one key pair given here and refuses a
// request signed with another secret (SignatureDoesNotMatch). Unsigned requests are anonymous
// reads, which it allows.
//
//   node s3_server.js DIRECTORY ACCESS_KEY_ID BUCKET...
//
// The secret is read from the environment (S3_TEST_SECRET), so it is never on a command line.
// DIRECTORY holds s3rver's store (objects are PUT by the tests). The first line on
// stdout is the port. Each request is logged, before its body is sent, as one JSON line appended
// to the file S3_TEST_LOG names (method, host, path, range, status, the credential's scope, the
// signed headers, the session token).
'use strict';

const { appendFileSync, createReadStream } = require('fs');
const S3rver = require('@20minutes/s3rver');
const AWSAccount = require('@20minutes/s3rver/lib/models/account');
const FilesystemStore = require('@20minutes/s3rver/lib/stores/filesystem');

// s3rver 4.0.4 reads the range "bytes=0-0" as the whole file (an end of 0 taken for none); S3
// answers it with the first byte, which onnxmap asks for to learn a data file's size.
const getObject = FilesystemStore.prototype.getObject;
FilesystemStore.prototype.getObject = async function (bucket, key, options) {
  const object = await getObject.call(this, bucket, key, options);
  if (!object || !object.content || !options || options.end !== 0 || options.start !== 0) {
    return object;
  }
  object.content.destroy();
  object.content = createReadStream(this.getResourcePath(bucket, key, 'object'), {
    start: 0,
    end: 0,
  });
  object.range = { start: 0, end: 0 };
  return object;
};

async function main() {
  const [directory, accessKeyId, ...buckets] = process.argv.slice(2);
  const secret = process.env.S3_TEST_SECRET;
  if (!directory || !accessKeyId || !secret || buckets.length === 0) {
    console.error('usage: S3_TEST_SECRET=... node s3_server.js DIRECTORY ACCESS_KEY_ID BUCKET...');
    process.exit(2);
  }
  AWSAccount.DUMMY_ACCOUNT.revokeAccessKey('S3RVER');
  AWSAccount.DUMMY_ACCOUNT.createKeyPair(accessKeyId, secret);
  const server = new S3rver({
    address: '127.0.0.1',
    port: 0,
    silent: true,
    directory,
    serviceEndpoint: 'localhost',
    configureBuckets: buckets.map((name) => ({ name })),
  });
  // First in the chain, so that it sees every answer (the router ends the chain).
  server.middleware.unshift(async (ctx, next) => {
    try {
      await next();
    } catch (error) {
      log(ctx, error.status || 500); // s3rver's errors (S3Error) carry their status
      throw error;
    }
    log(ctx, ctx.status);
  });
  const { port } = await server.run();
  process.stdout.write(port + '\n');
}

// Appends the request and the status of its answer to S3_TEST_LOG.
function log(ctx, status) {
  // "AWS4-HMAC-SHA256 Credential=KEY/DATE/REGION/s3/aws4_request, SignedHeaders=a;b, ..."
  const authorization = ctx.get('authorization');
  const part = (name) => (authorization.match(new RegExp(name + '=([^,]*)')) || [])[1] || null;
  const entry = {
    method: ctx.method,
    host: ctx.get('host'),
    path: ctx.path,
    range: ctx.get('range') || null,
    status,
    auth: authorization !== '',
    credential: part('Credential'),
    signed: part('SignedHeaders'),
    token: ctx.get('x-amz-security-token') || null,
  };
  if (process.env.S3_TEST_LOG) {
    appendFileSync(process.env.S3_TEST_LOG, JSON.stringify(entry) + '\n');
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
