// Shared by the end-to-end tests: serves ../dist on 127.0.0.1, starts Debian's Chromium with
// playwright-core (never a downloaded browser), and reads the CLI's outputs for comparison.
import assert from 'node:assert/strict';
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

export const here = path.dirname(fileURLToPath(import.meta.url));
export const ROOT = path.resolve(here, '..');
export const DIST = path.join(ROOT, 'dist');
export const OUT = process.env.E2E_OUT || path.join(here, 'artifacts');
export const SHARED = process.env.JARVIS_SHARED || path.resolve(ROOT, '..', 'shared');
// scripts/test builds the CLI in its `ci` profile and names it here; by hand, the release build.
export const JARVIS = process.env.JARVIS_BIN || path.join(ROOT, 'target', 'release', 'jarvis');
const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.wasm': 'application/wasm', '.css': 'text/css',
  '.svg': 'image/svg+xml', '.gz': 'application/gzip', '.txt': 'text/plain', '.json': 'application/json' };
/** The million-kernel synthetic trace the benchmarks load (`jarvis synth --steps 6330`, 1,000,140
 * kernels) as bench-out/synth_1m_kernels.<ext>, written by the CLI when missing. */
export function millionKernelTrace(ext) {
  const trace = path.join(ROOT, 'bench-out', `synth_1m_kernels.${ext}`);
  if (!fs.existsSync(trace)) {
    fs.mkdirSync(path.dirname(trace), { recursive: true });
    console.log(execFileSync(JARVIS, ['synth', '--out', trace, '--steps', '6330']).toString().trim());
  }
  return trace;
}
export const QWEN = path.join(SHARED, 'traces', 'tracelens', 'h100_Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz');

let server, browser, base;

/** The served page's origin. */
export const baseUrl = () => base;
/** The browser startApp launched (benchmarks open their own contexts). */
export const browserInstance = () => browser;

/** Serves the static folder `dist` on 127.0.0.1 (a free port): `{ server, base }`. `replaced`
 * maps a path (`/worker_loader.js`) to the text served instead of that file. */
export async function serveDir(dist, replaced = {}) {
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    const text = replaced[url.pathname];
    if (text !== undefined) {
      res.writeHead(200, { 'Content-Type': TYPES[path.extname(url.pathname)] || 'text/plain' });
      res.end(text);
      return;
    }
    let file = path.join(dist, decodeURIComponent(url.pathname));
    if (!file.startsWith(dist)) { res.writeHead(403).end(); return; }
    if (fs.existsSync(file) && fs.statSync(file).isDirectory()) file = path.join(file, 'index.html');
    if (!fs.existsSync(file)) { res.writeHead(404).end(); return; }
    res.writeHead(200, { 'Content-Type': TYPES[path.extname(file)] || 'application/octet-stream' });
    fs.createReadStream(file).pipe(res);
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { server, base: `http://127.0.0.1:${server.address().port}` };
}

/** Debian's headless Chromium with the offline flags (docs/toolchain.md). */
export function launchChromium() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'],
  });
}

/** A blank page of `browser` whose file input `#f` holds `file`: what the read probes hand to
 * the workers they start. */
export async function filePage(browser, file) {
  const page = await browser.newPage();
  await page.setContent('<input type=file id=f>');
  await page.locator('#f').setInputFiles(file);
  return page;
}

/** A new page at `url`, its worker warmed up and 1.5 s more: how the benchmarks hand a file to
 * a page a person has had open a moment. */
export async function warmedPage(browser, url) {
  const page = await browser.newPage();
  await page.goto(url);
  await page.getByTestId('app-status').getByText('Ready').waitFor({ timeout: 60000 });
  await page.locator('body[data-worker-warm-ms]').waitFor({ timeout: 60000 });
  await page.waitForTimeout(1500);
  return page;
}

/** A finished load's times (ms): reading + parsing and the worker's answer (the analysis-cost
 * line), file chosen → overview painted and → every view ready (`src/timing.rs`). */
export async function loadTimes(page) {
  const cost = page.getByTestId('analysis-cost');
  const [overview, complete] = await page.evaluate(
    () => [document.body.dataset.firstAnswerMs, document.body.dataset.completeMs].map(Number));
  return {
    parse: Number(await cost.getAttribute('data-parse-ms')),
    answer: Number(await cost.getAttribute('data-elapsed-ms')),
    overview,
    complete,
  };
}

export async function startApp() {
  assert.ok(fs.existsSync(path.join(DIST, 'index.html')), `run 'trunk build --release' first (${DIST})`);
  ({ server, base } = await serveDir(DIST));
  fs.mkdirSync(OUT, { recursive: true });
  browser = await launchChromium();
}

export async function stopApp() {
  await browser?.close();
  server?.close();
}

// Opens the app; records console errors, page errors and every request's URL.
// `options`: more browser-context options (colorScheme, permissions). The scheme is dark unless
// asked (the page's default; pixel checks assume its colours).
// `query`: the page address's query (`?threads=2`: the worker's import workers).
export async function openApp(viewport = { width: 1200, height: 1000 }, options = {}, query = '') {
  return openAt(base + '/' + query, viewport, options);
}

/** openApp for a page at `url` (another server's, as `serveDir` gives). */
export async function openAt(url, viewport = { width: 1200, height: 1000 }, options = {}) {
  const page = await browser.newPage({ viewport, colorScheme: 'dark', ...options });
  const errors = [];
  const requests = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('request', (r) => requests.push(r.url()));
  await page.goto(url);
  await page.getByTestId('app-status').getByText('Ready').waitFor({ timeout: 30000 });
  return { page, errors, requests };
}

export function assertLocalOnly(requests, origin = base) {
  for (const url of requests) {
    assert.ok(url.startsWith(origin + '/') || url.startsWith('blob:') || url.startsWith('data:'), `request left the page: ${url}`);
  }
}

// The CLI's gpu_timeline.csv for a trace, as { type: ms } (`extra`: more CLI flags).
export function cliTimeline(trace, extra = []) {
  const dir = fs.mkdtempSync(path.join(OUT, 'cli-'));
  execFileSync(JARVIS, ['report', trace, '--out', dir, '--platform', 'none', ...extra], { stdio: 'ignore' });
  const lines = fs.readFileSync(path.join(dir, 'perf_report_csvs', 'gpu_timeline.csv'), 'utf8').trim().split('\n').slice(1);
  fs.rmSync(dir, { recursive: true, force: true });
  return Object.fromEntries(lines.map((l) => { const [type, ms] = l.split(','); return [type, Number(ms)]; }));
}

// RFC 4180 CSV (quoted fields with commas, doubled quotes) as rows of strings.
export function parseCsv(text) {
  const rows = [];
  let row = [], field = '', quoted = false;
  for (let i = 0; i < text.length; i += 1) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') { field += '"'; i += 1; } else if (c === '"') quoted = false; else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') { row.push(field); field = ''; } else if (c === '\n') { row.push(field); rows.push(row); row = []; field = ''; } else if (c !== '\r') field += c;
  }
  if (field || row.length) { row.push(field); rows.push(row); }
  const [header, ...body] = rows;
  return body.map((r) => Object.fromEntries(header.map((h, i) => [h, r[i]])));
}

// The CLI's CSV of one sheet for a trace.
export function cliSheet(trace, sheet) {
  const dir = fs.mkdtempSync(path.join(OUT, 'sheet-'));
  execFileSync(JARVIS, ['report', trace, '--out', dir], { stdio: 'ignore' });
  const rows = parseCsv(fs.readFileSync(path.join(dir, 'perf_report_csvs', `${sheet}.csv`), 'utf8'));
  fs.rmSync(dir, { recursive: true, force: true });
  return rows;
}

// The GPU-timeline cells as { type: ms }.
export async function timelineShown(page) {
  const cells = await page.locator('[data-testid^=gpu-timeline-]').evaluateAll((els) =>
    els.map((e) => [e.dataset.testid, e.dataset.value]));
  return Object.fromEntries(cells);
}

// Drops a file on the page as a browser would (a synthetic DataTransfer): the whole window
// takes drops, so by default it lands on the app's root; `target` picks another element.
export async function dropFile(page, bytes, name, type, target = 'main.app') {
  // A person can drop only on a page they see: wait until the app has mounted it (the race the
  // load test is about is the worker not being ready, not the page not being drawn).
  await page.locator(target).first().waitFor({ state: 'attached' });
  await page.evaluate(([data, name, type, target]) => {
    const dt = new DataTransfer();
    dt.items.add(new File([new Uint8Array(data)], name, { type }));
    const zone = document.querySelector(target);
    zone.dispatchEvent(new DragEvent('dragover', { dataTransfer: dt, bubbles: true, cancelable: true }));
    zone.dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
  }, [Array.from(bytes), name, type, target]);
}

// Downloads one export from the top bar's menu: { name, bytes }.
export async function exportFile(page, id) {
  await page.getByTestId('export-menu').locator('summary').click();
  const [download] = await Promise.all([page.waitForEvent('download'), page.getByTestId(id).click()]);
  return { name: download.suggestedFilename(), bytes: fs.readFileSync(await download.path()) };
}
