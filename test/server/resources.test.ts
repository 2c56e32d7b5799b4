// Artifacts as resource links: every run, send and command
// result carries a resource_link per file it created or modified (codexec://exec/<id>/<path>),
// and resources/read returns it (text, or a base64 blob), confined like read_file, in both eras.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERAS, startServer, type TestServer } from '../helpers/server.js';

interface Block {
  type: string;
  uri?: string;
  name?: string;
  mimeType?: string;
}

const ALL_BYTES = 'bytes(range(256))';

describe.each(ERAS)('resource links and resources/read (%s era)', (era) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ era, env: { CODEXEC_MAX_FILE_TRANSFER_BYTES: '4096' } });
  });
  afterAll(() => server.close());

  const call = async (name: string, args: Record<string, unknown>) => {
    const result = await server.client.callTool({ name, arguments: args });
    return { blocks: result.content as Block[], value: result.structuredContent as Record<string, unknown> };
  };
  const links = (blocks: Block[]) => blocks.filter((block) => block.type === 'resource_link');
  const read = (uri: string) => server.client.readResource({ uri });

  it('links the files a run made, and reads back text and binary', async () => {
    const { blocks, value } = await call('execute_code', {
      language: 'python',
      code: `open("out.txt", "w").write("héllo\\n")\nopen("data.bin", "wb").write(${ALL_BYTES})`,
    });
    const id = value.execution_id as string;
    expect(blocks[0]?.type).toBe('text');
    expect(
      links(blocks)
        .map((block) => [block.name, block.uri, block.mimeType])
        .sort(),
    ).toEqual([
      ['data.bin', `codexec://exec/${id}/data.bin`, undefined],
      ['out.txt', `codexec://exec/${id}/out.txt`, 'text/plain'],
    ]);
    const text = await read(`codexec://exec/${id}/out.txt`);
    expect(text.contents).toEqual([
      { uri: `codexec://exec/${id}/out.txt`, mimeType: 'text/plain', text: 'héllo\n' },
    ]);
    const blob = await read(`codexec://exec/${id}/data.bin`);
    const bytes = Buffer.from((blob.contents[0] as { blob: string }).blob, 'base64');
    expect([...bytes]).toEqual([...Array(256).keys()]);
  });

  it('links at most 20 files (the JSON lists them all)', async () => {
    const { blocks, value } = await call('execute_code', {
      language: 'bash',
      code: 'for i in $(seq 1 25); do echo $i > "f$i.txt"; done',
    });
    expect((value.artifacts as string[]).length).toBe(25);
    expect(links(blocks)).toHaveLength(20);
  });

  it('links and reads the files of a session send and of execute_command', async () => {
    const session = await call('start_session', { language: 'python' });
    const sent = await call('send_to_session', {
      session_id: session.value.session_id,
      code: 'import os\nos.makedirs("sub dir", exist_ok=True)\nopen("sub dir/a b.csv", "w").write("x,y\\n")',
    });
    const [link] = links(sent.blocks);
    expect(link?.uri).toBe(`codexec://exec/${sent.value.execution_id}/sub%20dir/a%20b.csv`);
    expect((await read(link?.uri as string)).contents[0]).toMatchObject({
      mimeType: 'text/csv',
      text: 'x,y\n',
    });
    // The same file through the session's own URI.
    const bySession = await read(`codexec://session/${session.value.session_id}/sub%20dir/a%20b.csv`);
    expect(bySession.contents[0]).toMatchObject({ text: 'x,y\n' });
    await call('close_session', { session_id: session.value.session_id });

    const command = await call('execute_command', { command: 'echo built > artifact.txt' });
    const [built] = links(command.blocks);
    expect((await read(built?.uri as string)).contents[0]).toMatchObject({ text: 'built\n' });
    expect((await read('codexec://workspace/artifact.txt')).contents[0]).toMatchObject({ text: 'built\n' });
  });

  it('refuses what is outside, unknown, malformed or too large', async () => {
    const { value } = await call('execute_code', {
      language: 'bash',
      code: 'ln -s /etc/passwd escape; mkdir d; ln -s /etc d/up; head -c 5000 /dev/zero > big.bin; echo ok > fine.txt',
    });
    const id = value.execution_id as string;
    for (const [uri, why] of [
      [`codexec://exec/${id}/escape`, /outside|symlink/],
      [`codexec://exec/${id}/d/up/passwd`, /outside|symlink/],
      // URL parsing resolves dot segments first: this names run "etc", which does not exist.
      [`codexec://exec/${id}/%2E%2E/%2E%2E/etc/passwd`, /codexec:\/\/exec\/etc\/passwd/],
      [`codexec://exec/${id}/d`, /not a regular file/],
      [`codexec://exec/${id}/missing.txt`, /no such file/],
      [`codexec://exec/${id}/big.bin`, /CODEXEC_MAX_FILE_TRANSFER_BYTES/],
      ['codexec://exec/exec_ffffffffffff/fine.txt', /exec_ffffffffffff/],
      ['codexec://session/sess_nope/fine.txt', /sess_nope/],
      ['codexec://nowhere/fine.txt', /exec\/<execution_id>/],
      [`codexec://exec/${id}/%E0%A4%A`, /malformed/],
    ] as const) {
      await expect(read(uri), uri).rejects.toThrow(why);
    }
    expect((await read(`codexec://exec/${id}/fine.txt`)).contents[0]).toMatchObject({ text: 'ok\n' });
  });
});
