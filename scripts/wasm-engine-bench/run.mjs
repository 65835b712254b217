// Times the engine's phases on one trace, several runs in one V8 instance (so the first shows
// baseline code and the later ones optimized code): node run.mjs pkg/ TRACE [RUNS]; each run also analyzes without timeline lanes
import fs from 'node:fs';
import path from 'node:path';

const [dir, trace, runs = '4'] = process.argv.slice(2);
const m = await import(path.resolve(dir, 'wasm_engine_bench.js'));
const bytes = fs.readFileSync(trace);
console.log(`${path.basename(trace)}: ${(bytes.length / 1e6).toFixed(1)} MB on disk`);
for (let i = 0; i < Number(runs); i += 1) {
  const gunzip = m.inflate_ms(bytes);
  const [read, analysis] = m.phases(bytes, true);
  // The analysis as the CLI runs it (no timeline lanes), to compare with `jarvis report --timings`.
  const [, bare] = m.phases(bytes, false);
  console.log(`run ${i + 1}: gunzip alone ${gunzip.toFixed(0)} ms; read (gunzip + parse) ${read.toFixed(0)} ms, analysis ${analysis.toFixed(0)} ms (without lanes ${bare.toFixed(0)} ms), together ${(read + analysis).toFixed(0)} ms`);
}
