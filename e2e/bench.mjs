// In-browser benchmark (not a test): analysis time, MB/s of JSON and the worker's WebAssembly
// memory for the largest shared traces and for synthetic traces, in Debian's headless Chromium.
// Usage (after `trunk build --release`): node e2e/bench.mjs [FILE ...]
// Default inputs: the OWLv2 traces from ../shared and bench-out/synth_{1g,2g}.json if present.
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(here, '..');
const DIST = path.join(ROOT, 'dist');
const SHARED = process.env.JARVIS_SHARED || path.resolve(ROOT, '..', 'shared');
const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.wasm': 'application/wasm', '.css': 'text/css', '.svg': 'image/svg+xml' };

const defaults = [
  path.join(SHARED, 'traces/tracelens/mi300xvf_google_owlv2-large-patch14-ensemble__1016001.json.gz'),
  path.join(ROOT, 'bench-out/mi300xvf_google_owlv2-large-patch14-ensemble__1016001.json'),
  path.join(ROOT, 'bench-out/synth_1g.json'),
  path.join(ROOT, 'bench-out/synth_2g.json'),
];
const inputs = (process.argv.length > 2 ? process.argv.slice(2) : defaults).filter((f) => fs.existsSync(f));

const server = http.createServer((req, res) => {
  let file = path.join(DIST, decodeURIComponent(new URL(req.url, 'http://x').pathname));
  if (fs.existsSync(file) && fs.statSync(file).isDirectory()) file = path.join(file, 'index.html');
  if (!file.startsWith(DIST) || !fs.existsSync(file)) { res.writeHead(404).end(); return; }
  res.writeHead(200, { 'Content-Type': TYPES[path.extname(file)] || 'application/octet-stream' });
  fs.createReadStream(file).pipe(res);
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const base = `http://127.0.0.1:${server.address().port}`;
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'],
});
console.log('| input | JSON MB | in-browser s | MB/s | worker WASM memory MB |');
console.log('|---|---|---|---|---|');
for (const file of inputs) {
  const page = await browser.newPage();
  await page.goto(base + '/');
  await page.getByTestId('app-status').getByText('Ready').waitFor({ timeout: 60000 });
  await page.getByTestId('trace-input').setInputFiles(file);
  const cost = page.getByTestId('analysis-cost');
  await cost.waitFor({ timeout: 600000 });
  const ms = Number(await cost.getAttribute('data-elapsed-ms'));
  const jsonMb = Number(await cost.getAttribute('data-json-bytes')) / 1e6;
  const mem = Number(await cost.getAttribute('data-wasm-memory')) / 1e6;
  console.log(`| ${path.basename(file)} | ${jsonMb.toFixed(1)} | ${(ms / 1000).toFixed(2)} | ${(jsonMb / (ms / 1000)).toFixed(0)} | ${mem.toFixed(0)} |`);
  await page.close();
}
await browser.close();
server.close();
