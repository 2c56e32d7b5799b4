// codexec's real `serve --http --no-auth` stack (config, listener, Host/Origin guards, principals,
// createMcpHandler, every codexec tool) with the conformance suite's fixtures added to each server
// instance: the `test_*` tools, `test://` resources, prompts and completions its scenarios call by
// name. Test-only: the shipped server never has them. Serves on 127.0.0.1, port 0, and says
// "listening on <url>" on stderr as codexec does.
import { Buffer } from 'node:buffer';
import { completable, fromJsonSchema, ResourceTemplate } from '@modelcontextprotocol/server';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/server/validators/ajv';
import { z } from 'zod';
import { configOrExit } from '../../dist/cli/config.js';
import { serveHttp } from '../../dist/server/http/index.js';

/** A 1×1 PNG. */
const PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';

/** 100 ms of silence as an 8 kHz, 8-bit mono WAV file. */
function silentWav() {
  const samples = Buffer.alloc(800, 128);
  const head = Buffer.alloc(44);
  head.write('RIFF', 0);
  head.writeUInt32LE(36 + samples.length, 4);
  head.write('WAVEfmt ', 8);
  head.writeUInt32LE(16, 16); // fmt chunk size
  head.writeUInt16LE(1, 20); // PCM
  head.writeUInt16LE(1, 22); // channels
  head.writeUInt32LE(8000, 24); // sample rate
  head.writeUInt32LE(8000, 28); // byte rate
  head.writeUInt16LE(1, 32); // block align
  head.writeUInt16LE(8, 34); // bits per sample
  head.write('data', 36);
  head.writeUInt32LE(samples.length, 40);
  return Buffer.concat([head, samples]).toString('base64');
}

const text = (value) => ({ type: 'text', text: value });
const image = { type: 'image', data: PNG, mimeType: 'image/png' };
const embedded = (uri) => ({
  type: 'resource',
  resource: { uri, mimeType: 'text/plain', text: `The text of ${uri}.` },
});

/** The tools the scenarios call (names and shapes as the suite's scenarios ask for them). */
function addTools(server) {
  const none = z.object({});
  server.registerTool(
    'test_simple_text',
    { description: 'Returns one text block', inputSchema: none },
    () => ({
      content: [text('This is a simple text response for testing.')],
    }),
  );
  server.registerTool('test_image_content', { description: 'Returns an image', inputSchema: none }, () => ({
    content: [image],
  }));
  server.registerTool('test_audio_content', { description: 'Returns a WAV clip', inputSchema: none }, () => ({
    content: [{ type: 'audio', data: silentWav(), mimeType: 'audio/wav' }],
  }));
  server.registerTool(
    'test_embedded_resource',
    { description: 'Returns an embedded resource', inputSchema: none },
    () => ({ content: [embedded('test://embedded-resource')] }),
  );
  server.registerTool(
    'test_multiple_content_types',
    { description: 'Returns text, an image and a resource', inputSchema: none },
    () => ({
      content: [text('Several kinds of content:'), image, embedded('test://mixed-content-resource')],
    }),
  );
  server.registerTool(
    'test_tool_with_logging',
    { description: 'Logs three lines while it runs', inputSchema: none },
    async (_args, ctx) => {
      for (const line of ['starting', 'halfway', 'done'])
        await ctx.mcpReq.log('info', `test_tool_with_logging: ${line}`);
      return { content: [text('Logged three lines.')] };
    },
  );
  server.registerTool(
    'test_tool_with_progress',
    { description: 'Reports progress three times', inputSchema: none },
    async (_args, ctx) => {
      const progressToken = ctx.mcpReq._meta?.progressToken;
      for (const progress of [0, 50, 100]) {
        if (progressToken === undefined) break;
        await ctx.mcpReq.notify({
          method: 'notifications/progress',
          params: { progressToken, progress, total: 100 },
        });
      }
      return { content: [text('Reported progress.')] };
    },
  );
  server.registerTool('test_error_handling', { description: 'Always fails', inputSchema: none }, () => {
    throw new Error('This tool always fails, on purpose.');
  });
  server.registerTool(
    'json_schema_2020_12_tool',
    {
      description: 'Takes a JSON Schema 2020-12 input with $defs',
      inputSchema: fromJsonSchema(
        {
          $schema: 'https://json-schema.org/draft/2020-12/schema',
          type: 'object',
          $defs: {
            address: {
              type: 'object',
              properties: { street: { type: 'string' }, city: { type: 'string' } },
            },
          },
          properties: { name: { type: 'string' }, address: { $ref: '#/$defs/address' } },
          additionalProperties: false,
        },
        new AjvJsonSchemaValidator(),
      ),
    },
    (args) => ({ content: [text(JSON.stringify(args))] }),
  );
  addAskingTools(server);
}

/** The tools that ask the client (sampling, elicitation) while they run. */
function addAskingTools(server) {
  server.registerTool(
    'test_sampling',
    { description: "Asks the client's model", inputSchema: z.object({ prompt: z.string() }) },
    async ({ prompt }, ctx) => {
      const answer = await ctx.mcpReq.requestSampling({
        messages: [{ role: 'user', content: text(prompt) }],
        maxTokens: 100,
      });
      return { content: [text(`The model said: ${JSON.stringify(answer.content)}`)] };
    },
  );
  const elicit = async (ctx, message, properties) => {
    const answer = await ctx.mcpReq.elicitInput({ message, requestedSchema: { type: 'object', properties } });
    return { content: [text(`The user answered ${answer.action}: ${JSON.stringify(answer.content ?? {})}`)] };
  };
  server.registerTool(
    'test_elicitation',
    { description: 'Asks the user for a name and an email', inputSchema: z.object({ message: z.string() }) },
    ({ message }, ctx) =>
      elicit(ctx, message, { username: { type: 'string' }, email: { type: 'string', format: 'email' } }),
  );
  server.registerTool(
    'test_elicitation_sep1034_defaults',
    { description: 'Asks with a default for each kind of field', inputSchema: z.object({}) },
    (_args, ctx) =>
      elicit(ctx, 'Your details (defaults given)', {
        name: { type: 'string', default: 'John Doe' },
        age: { type: 'integer', default: 30 },
        score: { type: 'number', default: 95.5 },
        status: { type: 'string', enum: ['active', 'inactive', 'pending'], default: 'active' },
        verified: { type: 'boolean', default: true },
      }),
  );
  const titled = (values) => values.map((value) => ({ const: value, title: `Title of ${value}` }));
  server.registerTool(
    'test_elicitation_sep1330_enums',
    { description: 'Asks with each kind of enum field', inputSchema: z.object({}) },
    (_args, ctx) =>
      elicit(ctx, 'Choose', {
        untitledSingle: { type: 'string', enum: ['option1', 'option2', 'option3'] },
        titledSingle: { type: 'string', oneOf: titled(['value1', 'value2', 'value3']) },
        legacyEnum: { type: 'string', enum: ['opt1', 'opt2', 'opt3'], enumNames: ['One', 'Two', 'Three'] },
        untitledMulti: { type: 'array', items: { type: 'string', enum: ['option1', 'option2', 'option3'] } },
        titledMulti: { type: 'array', items: { anyOf: titled(['value1', 'value2', 'value3']) } },
      }),
  );
}

/** test:// resources, a template, and subscriptions (to a resource that never changes). */
function addResources(server) {
  server.registerResource(
    'static-text',
    'test://static-text',
    { description: 'A text resource', mimeType: 'text/plain' },
    (uri) => ({
      contents: [
        { uri: uri.href, mimeType: 'text/plain', text: 'This is the content of the static text resource.' },
      ],
    }),
  );
  server.registerResource(
    'static-binary',
    'test://static-binary',
    { description: 'A binary resource', mimeType: 'image/png' },
    (uri) => ({ contents: [{ uri: uri.href, mimeType: 'image/png', blob: PNG }] }),
  );
  server.registerResource(
    'watched-resource',
    'test://watched-resource',
    { description: 'A resource to subscribe to', mimeType: 'text/plain' },
    (uri) => ({ contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'It never changes.' }] }),
  );
  server.registerResource(
    'template-data',
    new ResourceTemplate('test://template/{id}/data', { list: undefined }),
    { description: 'Data for an id', mimeType: 'application/json' },
    (uri, { id }) => ({
      contents: [
        { uri: uri.href, mimeType: 'application/json', text: JSON.stringify({ id, data: `Data for ${id}` }) },
      ],
    }),
  );
  // test://watched-resource never changes, so a subscriber is owed no notifications/resources/updated.
  server.server.registerCapabilities({ resources: { subscribe: true } });
  server.server.setRequestHandler('resources/subscribe', () => ({}));
  server.server.setRequestHandler('resources/unsubscribe', () => ({}));
}

/** Prompts, one of them with a completable argument (completion/complete). */
function addPrompts(server) {
  server.registerPrompt('test_simple_prompt', { description: 'A prompt without arguments' }, () => ({
    messages: [{ role: 'user', content: text('This is a simple prompt for testing.') }],
  }));
  const starts = (values) => (value) => values.filter((candidate) => candidate.startsWith(value));
  server.registerPrompt(
    'test_prompt_with_arguments',
    {
      description: 'A prompt with two arguments',
      argsSchema: z.object({
        arg1: completable(z.string(), starts(['paris', 'park', 'party', 'test-value'])),
        arg2: z.string(),
      }),
    },
    ({ arg1, arg2 }) => ({
      messages: [{ role: 'user', content: text(`Prompt with arguments: arg1='${arg1}', arg2='${arg2}'`) }],
    }),
  );
  server.registerPrompt(
    'test_prompt_with_embedded_resource',
    { description: 'A prompt that embeds a resource', argsSchema: z.object({ resourceUri: z.string() }) },
    ({ resourceUri }) => ({
      messages: [
        { role: 'user', content: embedded(resourceUri) },
        { role: 'user', content: text('Please process the embedded resource above.') },
      ],
    }),
  );
  server.registerPrompt('test_prompt_with_image', { description: 'A prompt with an image' }, () => ({
    messages: [
      { role: 'user', content: image },
      { role: 'user', content: text('Please describe the image above.') },
    ],
  }));
}

await serveHttp(configOrExit(), { host: '127.0.0.1', port: 0, noAuth: true }, (server) => {
  addTools(server);
  addResources(server);
  addPrompts(server);
});
process.exit(0);
