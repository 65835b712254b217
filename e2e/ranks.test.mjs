// End-to-end test of a multi-rank job in the page: four rank traces from `jarvis synth --ranks 4`
// (straggler rank 1, input stall on rank 2) and one file that is not a trace, picked at once.
// The worker pool analyzes them, the bad file fails in its own row, the Ranks tab shows the
// CLI's per-rank figures and straggler, sorting works, a rank opens its single-trace views, and
// the job export reopens the Ranks tab.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { OUT, JARVIS, startApp, stopApp, openApp, assertLocalOnly, parseCsv, exportFile } from './harness.mjs';

before(startApp);
after(stopApp);

test('a job of rank traces: pool, Ranks tab, straggler, open a rank, export and reopen', async () => {
  const dir = fs.mkdtempSync(path.join(OUT, 'job-'));
  execFileSync(JARVIS, ['synth', '--ranks', '4', '--steps', '4', '--out', dir], { stdio: 'ignore' });
  const cliOut = path.join(dir, 'cli');
  execFileSync(JARVIS, ['ranks', dir, '--out', cliOut], { stdio: 'ignore' });
  const cliRanks = parseCsv(fs.readFileSync(path.join(cliOut, 'ranks.csv'), 'utf8'));
  const straggler = cliRanks.find((r) => r.straggler === 'yes').rank;
  assert.equal(straggler, '1');

  const { page, errors, requests } = await openApp({ width: 1440, height: 900 });
  const files = [0, 1, 2, 3].map((r) => path.join(dir, `rank-${r}.json`));
  fs.writeFileSync(path.join(dir, 'notes.json'), 'this is not a trace');
  await page.getByTestId('trace-input').setInputFiles([...files, path.join(dir, 'notes.json')]);
  await page.getByTestId('ranks-table').waitFor({ timeout: 120000 });

  // Every rank's row, with the CLI's figures; the straggler marked.
  const rows = page.getByTestId('rank-row');
  assert.equal(await rows.count(), 4);
  const shown = await rows.evaluateAll((rs) => rs.map((r) => [r.dataset.rank, r.cells[2].textContent, r.classList.contains('straggler')]));
  for (const [rank, computation, isStraggler] of shown) {
    const cli = cliRanks.find((r) => r.rank === rank);
    assert.equal(computation, Number(cli.computation_ms).toFixed(2), `rank ${rank}`);
    assert.equal(isStraggler, rank === straggler, `rank ${rank}`);
  }
  assert.equal(await page.getByTestId('straggler-mark').count(), 1);
  assert.match(await page.getByTestId('ranks-summary').textContent(), /Straggler: rank 1\./);
  const kinds = await page.getByTestId('distributed-finding').evaluateAll((fs) => fs.map((f) => f.dataset.kind));
  assert.ok(kinds.includes('straggler'), kinds.join(','));
  // One all-reduce per step, matched across the four ranks.
  assert.equal(await page.getByTestId('collective-row').count(), 4);
  // The file that is not a trace is named in the job's diagnostics; the ranks went on.
  assert.match(await page.getByTestId('ranks-view').textContent(), /rank_unreadable|notes\.json/);
  await page.screenshot({ path: path.join(OUT, 'ranks.png'), fullPage: true });

  // Sorting by computation, descending: the straggler first.
  await page.getByTestId('sort-computation').click();
  assert.equal(await rows.first().getAttribute('data-rank'), '1');

  // A click on a rank opens its own views; the Ranks tab stays one click away.
  await rows.first().click();
  await page.getByTestId('tab-overview').waitFor({ timeout: 60000 });
  await page.getByTestId('tab-ranks').click();
  await page.getByTestId('ranks-table').waitFor();

  // The job export, reopened: the Ranks tab again, from the bundle alone.
  const zip = path.join(dir, 'jarvis_job.zip');
  fs.writeFileSync(zip, (await exportFile(page, 'export-job')).bytes);
  const page2 = (await openApp()).page;
  await page2.getByTestId('trace-input').setInputFiles(zip);
  await page2.getByTestId('ranks-table').waitFor({ timeout: 60000 });
  assert.equal(await page2.getByTestId('rank-row').count(), 4);
  assert.equal(await page2.getByTestId('straggler-mark').count(), 1);
  assert.deepEqual(errors, []);
  assertLocalOnly(requests);
  fs.rmSync(dir, { recursive: true, force: true });
});
