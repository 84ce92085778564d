// The JSON Schema of `s2s config schema` as editors use it: Red Hat's YAML
// language server (the one behind VS Code, Neovim and Emacs), driven over
// stdio with LSP messages, and compared with the loader (`s2s config check`).
//
//     node tests/yaml_ls_test.js SERVER_BIN S2S ROOT
//
// Checks:
// - a config with a mistyped key, a wrong type and an out-of-range value
//   gets one diagnostic for each, at the line and column where `s2s config
//   check` reports it;
// - completion inside `model:` offers `d_model`, hover shows a key's help;
// - every configs/*.yaml (through its own modeline, which names
//   docs/config.schema.json) and every `s2s config init` preset has no
//   diagnostics;
// - for every key, a valid value, a wrong type and an out-of-range value,
//   generated from the schema: the server and the loader both accept the
//   first and both refuse the others, at the value's line.
'use strict';
const { spawn, spawnSync } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { pathToFileURL } = require('url');

const [serverBin, s2s, root] = process.argv.slice(2);
if (!serverBin || !s2s || !root) {
  console.error('usage: node yaml_ls_test.js SERVER_BIN S2S ROOT');
  process.exit(2);
}

let passed = 0;
let failed = 0;
function check(ok, what, detail) {
  if (ok) {
    passed++;
  } else {
    failed++;
    console.log(`FAIL: ${what}${detail ? '\n    ' + detail : ''}`);
  }
}

// ---- an LSP client over stdio ----

class Client {
  constructor(bin) {
    this.proc = spawn(process.execPath, [bin, '--stdio'], { stdio: ['pipe', 'pipe', 'inherit'] });
    this.buf = Buffer.alloc(0);
    this.nextId = 1;
    this.pending = new Map();  // id -> resolve
    this.diagnostics = new Map();  // uri -> latest diagnostics
    this.waiters = [];  // functions called on each publishDiagnostics
    this.proc.stdout.on('data', (d) => this.receive(d));
  }

  send(msg) {
    const body = Buffer.from(JSON.stringify({ jsonrpc: '2.0', ...msg }), 'utf8');
    this.proc.stdin.write(`Content-Length: ${body.length}\r\n\r\n`);
    this.proc.stdin.write(body);
  }

  request(method, params) {
    const id = this.nextId++;
    this.send({ id, method, params });
    return new Promise((resolve) => this.pending.set(id, resolve));
  }

  notify(method, params) { this.send({ method, params }); }

  receive(data) {
    this.buf = Buffer.concat([this.buf, data]);
    for (;;) {
      const end = this.buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      const m = /Content-Length: (\d+)/i.exec(this.buf.slice(0, end).toString());
      const len = m ? Number(m[1]) : 0;
      if (this.buf.length < end + 4 + len) return;
      const msg = JSON.parse(this.buf.slice(end + 4, end + 4 + len).toString('utf8'));
      this.buf = this.buf.slice(end + 4 + len);
      this.handle(msg);
    }
  }

  handle(msg) {
    if (msg.id !== undefined && msg.method === undefined) {
      const resolve = this.pending.get(msg.id);
      this.pending.delete(msg.id);
      if (resolve) resolve(msg);
    } else if (msg.id !== undefined) {
      // A request from the server: settings, capability registration.
      let result = null;
      if (msg.method === 'workspace/configuration')
        result = msg.params.items.map((it) => (it.section === 'yaml' ? settings.yaml : null));
      this.send({ id: msg.id, result });
    } else if (msg.method === 'textDocument/publishDiagnostics') {
      this.diagnostics.set(msg.params.uri, msg.params.diagnostics);
      this.lastPublish = Date.now();
      this.waiters.forEach((w) => w());
    }
  }

  // Resolves once every uri has diagnostics and none came for `quietMs`.
  settled(uris, quietMs) {
    return new Promise((resolve) => {
      const poll = () => {
        if (uris.every((u) => this.diagnostics.has(u)) && Date.now() - this.lastPublish >= quietMs)
          resolve();
        else setTimeout(poll, 50);
      };
      poll();
    });
  }
}

// No schema store: this test is offline apart from npm, and only the
// modeline should pick the schema.
const settings = {
  yaml: { validate: true, completion: true, hover: true, format: { enable: false },
          schemaStore: { enable: false }, schemas: {}, yamlVersion: '1.2' },
};

// ---- what the loader says ----

// `s2s config check FILE`: { ok, positions: ["line:col", ...] } (1-based).
function loaderVerdict(file) {
  const r = spawnSync(s2s, ['config', 'check', file], { encoding: 'utf8' });
  const positions = [];
  const re = new RegExp(escapeRe(file) + ':(\\d+):(\\d+): ', 'g');
  let m;
  while ((m = re.exec(r.stderr)) !== null) positions.push(`${m[1]}:${m[2]}`);
  return { ok: r.status === 0, status: r.status, positions, stderr: r.stderr };
}

function escapeRe(s) { return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'); }

function lspPos(d) { return `${d.range.start.line + 1}:${d.range.start.character + 1}`; }
function show(diags) { return JSON.stringify(diags.map((d) => `${lspPos(d)} ${d.message}`)); }

// ---- cases generated from the schema ----

// Every leaf of the schema: { path: [...], s } depth first.
function leaves(schema, prefix = []) {
  const out = [];
  for (const [name, s] of Object.entries(schema.properties || {})) {
    if (name === 'base') continue;
    const types = [].concat(s.type);
    if (types.includes('object')) out.push(...leaves(s, prefix.concat(name)));
    else out.push({ path: prefix.concat(name), s });
  }
  return out;
}

function yamlNumber(v) { return Number.isInteger(v) ? String(v) : String(v).replace(/^(-?\d+)$/, '$1.0'); }

// A value below or above the key's range, as YAML text; null if it has none.
function outOfRange(s) {
  const num = s.type === 'array' ? s.items : s;
  let bad = null;
  if (num.exclusiveMinimum !== undefined) bad = num.exclusiveMinimum;
  else if (num.minimum !== undefined && num.minimum > -2147483648) bad = num.minimum - (num.type === 'integer' ? 1 : 0.5);
  else if (num.exclusiveMaximum !== undefined) bad = num.exclusiveMaximum;
  else if (num.maximum !== undefined) bad = num.type === 'integer' ? num.maximum + 1 : 1e39;
  // A good first entry, so that only the second is at fault.
  if (s.type === 'array') return bad === null ? null : `[${num.type === 'integer' ? 0 : 0.5}, ${yamlNumber(bad)}]`;
  if (s.enum) return 'nope';
  if (s.type === 'boolean') return 'yes';  // YAML 1.1's boolean, a string in 1.2
  if (s.maxLength !== undefined) return 'x'.repeat(s.maxLength + 1);
  return bad === null ? null : yamlNumber(bad);
}

function cases(schema, existingFile) {
  const out = [];
  for (const { path: p, s } of leaves(schema)) {
    const types = [].concat(s.type);
    let valid;
    if (s.default !== undefined) valid = Array.isArray(s.default) ? `[${s.default.map(yamlNumber).join(', ')}]`
      : typeof s.default === 'number' ? yamlNumber(s.default) : String(s.default);
    else valid = JSON.stringify(existingFile);  // an unset path: one that exists
    const wrong = types.includes('string') && !s.enum ? '{a: 1}' : s.enum ? '5' : 'abc';
    out.push({ path: p, kind: 'a valid value', value: valid, accept: true });
    out.push({ path: p, kind: 'a wrong type', value: wrong, accept: false });
    const oor = outOfRange(s);
    // An index list (uniqueItems) is read entry by entry, and the loader
    // reports the entry at fault, as the server does.
    if (oor !== null) out.push({ path: p, kind: 'an out-of-range value', value: oor, accept: false,
                                 itemwise: s.type === 'array' && s.uniqueItems === true });
  }
  return out;
}

// The YAML of one case: the key nested under its tables, the value on the
// last line.
function caseText(c, modeline) {
  const lines = [modeline];
  c.path.forEach((name, depth) => {
    const last = depth === c.path.length - 1;
    lines.push(`${'  '.repeat(depth)}${name}:${last ? ' ' + c.value : ''}`);
  });
  return { text: lines.join('\n') + '\n', line: lines.length, col: 2 * (c.path.length - 1) + c.path.at(-1).length + 3 };
}

// ---- the test ----

async function main() {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 's2s-yaml-ls-'));
  const schemaText = spawnSync(s2s, ['config', 'schema'], { encoding: 'utf8' }).stdout;
  const schemaFile = path.join(tmp, 'schema.json');
  fs.writeFileSync(schemaFile, schemaText);
  const schema = JSON.parse(schemaText);
  const modeline = '# yaml-language-server: $schema=schema.json';

  const client = new Client(serverBin);
  const timer = setTimeout(() => {
    console.log('FAIL: the language server did not answer within 120 s');
    client.proc.kill();
    process.exit(1);
  }, 120000);
  await client.request('initialize', {
    processId: process.pid, rootUri: pathToFileURL(root).href, workspaceFolders: null,
    capabilities: {
      workspace: { configuration: true, didChangeConfiguration: { dynamicRegistration: false } },
      textDocument: { completion: { completionItem: { snippetSupport: false } },
                      hover: { contentFormat: ['plaintext', 'markdown'] },
                      publishDiagnostics: {} },
    },
  });
  client.notify('initialized', {});
  client.notify('workspace/didChangeConfiguration', { settings });

  const docs = [];  // { uri, file, ... }
  const open = (file, text, extra) => {
    const uri = pathToFileURL(file).href;
    client.notify('textDocument/didOpen', { textDocument: { uri, languageId: 'yaml', version: 1, text } });
    docs.push({ uri, file, text, ...extra });
    return uri;
  };

  // A mistyped key, a wrong type and an out-of-range value.
  const mistakes = path.join(tmp, 'mistakes.yaml');
  const mistakesText = `${modeline}\nmodel:\n  d_model: 64\n  hedas: 4\n  heads: four\ndecode:\n  beam_size: 0\n`;
  fs.writeFileSync(mistakes, mistakesText);
  const mistakesUri = open(mistakes, mistakesText);

  // The shipped configs, through their own modelines.
  const shipped = fs.readdirSync(path.join(root, 'configs')).filter((f) => f.endsWith('.yaml'));
  for (const f of shipped) {
    const file = path.join(root, 'configs', f);
    const text = fs.readFileSync(file, 'utf8');
    check(text.startsWith('# yaml-language-server: $schema=../docs/config.schema.json\n'),
          `configs/${f} starts with the schema modeline`);
    open(file, text, { shipped: f });
  }
  // The presets of `s2s config init`.
  for (const preset of ['demo', 'zh-en', 'bench']) {
    const file = path.join(tmp, `init-${preset}.yaml`);
    const r = spawnSync(s2s, ['config', 'init', '--preset', preset, '-o', file], { encoding: 'utf8' });
    check(r.status === 0, `s2s config init --preset ${preset}`, r.stderr);
    if (r.status !== 0) continue;
    const text = `${modeline}\n${fs.readFileSync(file, 'utf8')}`;
    fs.writeFileSync(file, text);
    open(file, text, { preset });
  }
  // One file per generated case.
  const generated = cases(schema, schemaFile);
  generated.forEach((c, i) => {
    const file = path.join(tmp, `case${i}.yaml`);
    const { text, line, col } = caseText(c, modeline);
    fs.writeFileSync(file, text);
    open(file, text, { c, line, col });
  });

  await client.settled(docs.map((d) => d.uri), 1500);

  // ---- the three mistakes, where the loader reports them ----
  const diags = client.diagnostics.get(mistakesUri);
  const loader = loaderVerdict(mistakes);
  const want = { '4:3': 'hedas', '5:10': 'four', '7:14': 'beam_size: 0' };
  check(!loader.ok && JSON.stringify(loader.positions.sort()) === JSON.stringify(Object.keys(want).sort()),
        'the loader reports the three mistakes at 4:3, 5:10 and 7:14', loader.stderr);
  for (const [pos, what] of Object.entries(want))
    check(diags.some((d) => lspPos(d) === pos), `the server flags '${what}' at ${pos}`, show(diags));
  check(diags.length === 3, 'the server reports the three mistakes and nothing else', show(diags));
  check(diags.some((d) => /hedas/.test(d.message) && /not allowed/i.test(d.message)),
        'the unknown key is named as not allowed', show(diags));

  // ---- configs/*.yaml and the presets: no diagnostics ----
  for (const d of docs.filter((x) => x.shipped || x.preset)) {
    const got = client.diagnostics.get(d.uri);
    check(got.length === 0, `${d.shipped ? 'configs/' + d.shipped : 'preset ' + d.preset} has no diagnostics`, show(got));
    check(loaderVerdict(d.file).ok, `${d.file} passes s2s config check`);
  }

  // ---- generated cases: the server and the loader agree ----
  let agreed = 0;
  for (const d of docs.filter((x) => x.c)) {
    const got = client.diagnostics.get(d.uri);
    const lsp = got.length === 0;
    const ld = loaderVerdict(d.file);
    const what = `${d.c.path.join('.')} with ${d.c.kind} (${d.c.value.slice(0, 30)})`;
    const same = lsp === ld.ok && lsp === d.c.accept;
    check(same, `${what}: expected ${d.c.accept ? 'accepted' : 'refused'}; server ${lsp ? 'accepted' : 'refused'}, loader ${ld.ok ? 'accepted' : 'refused'}`,
          lsp ? ld.stderr.split('\n')[0] : show(got));
    if (!d.c.accept && !lsp && d.c.itemwise) {
      // Both at the entries at fault.
      const srv = JSON.stringify([...new Set(got.map(lspPos))].sort());
      const ldp = JSON.stringify([...new Set(ld.positions)].sort());
      check(srv === ldp, `${what}: both report it at the entry at fault`,
            `server ${show(got)}, loader ${ld.positions}`);
    } else if (!d.c.accept && !lsp) {
      // At the value; the server points into a list at the item at fault.
      const at = `${d.line}:${d.col}`;
      const where = (g) => (d.c.value.startsWith('[') ? `${g.range.start.line + 1}` : lspPos(g));
      check(got.every((g) => where(g) === (d.c.value.startsWith('[') ? `${d.line}` : at)) &&
            ld.positions.includes(at),
            `${what}: both report it at ${at}`, `server ${show(got)}, loader ${ld.positions}`);
    }
    if (same) agreed++;
  }
  check(generated.length >= 30, `at least 30 generated cases (${generated.length})`);
  console.log(`schema and loader agree on ${agreed} of ${generated.length} generated cases`);

  // ---- completion and hover inside model: ----
  const completing = path.join(tmp, 'complete.yaml');
  const completingUri = open(completing, `${modeline}\nmodel:\n  heads: 4\n  \n`);
  const comp = await client.request('textDocument/completion', {
    textDocument: { uri: completingUri }, position: { line: 3, character: 2 } });
  const items = comp.result ? (Array.isArray(comp.result) ? comp.result : comp.result.items) : [];
  const labels = JSON.stringify(items.map((it) => it.label));
  check(items.some((it) => it.label === 'd_model'), 'completion inside model: offers d_model', labels);
  check(!items.some((it) => it.label === 'beam_size'), 'completion inside model: offers no decode: key',
        labels);
  const hover = await client.request('textDocument/hover', {
    textDocument: { uri: completingUri }, position: { line: 2, character: 3 } });
  const hoverText = JSON.stringify(hover.result || {});
  check(/Attention heads per attention block/.test(hoverText) && /default: `8`/.test(hoverText),
        'hover on heads shows its help and default', hoverText.slice(0, 300));

  clearTimeout(timer);
  await client.request('shutdown', null);
  client.notify('exit', null);
  fs.rmSync(tmp, { recursive: true, force: true });
  console.log(`yaml_ls: ${passed} passed, ${failed} failed`);
  process.exit(failed === 0 ? 0 : 1);
}

main().catch((e) => {
  console.log(`FAIL: ${e.stack}`);
  process.exit(1);
});
