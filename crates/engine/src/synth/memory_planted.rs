//! Small traces with `[memory]` records, each built around one known memory problem (and a
//! healthy counterpart), for the memory view's tests and `jarvis synth --planted NAME`.
//!
//! A tiny caching allocator writes the records: an allocation takes the smallest cached free
//! block that fits (split when larger) or reserves a new segment; a free caches its block,
//! merged with free neighbours of the same segment. Its totals are what
//! the records say, and the truth (peak, what is live there, what is never freed, the
//! reserve's growth) is tracked here as the trace is written, independently of the analysis.

use std::collections::BTreeMap;
use std::io::{self, Write};

use super::writer::{json_str, micros, EventWriter};
use crate::model::Nanos;

const PID: i64 = 200;
const TID: i64 = 200;
const MIB: i64 = 1 << 20;

/// What a case plants, as the allocator saw it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemoryTruth {
    pub device: String,
    /// The memory finding the case plants (`None`: a healthy counterpart).
    pub finding: Option<&'static str>,
    pub peak_allocated: i64,
    pub peak_reserved: i64,
    /// Live at the peak, bytes by `nn.Module` (innermost; "" outside any module), largest
    /// first.
    pub live_at_peak: Vec<(String, i64)>,
    /// Reserved but unused when the reserve first reached its peak.
    pub unused_at_reserved_peak: i64,
    pub never_freed: u64,
    pub never_freed_bytes: i64,
    pub frees_without_allocation: u64,
    /// Growth of `Total Allocated` per step, where every step leaks the same.
    pub growth_per_step: i64,
}

/// A planted memory case.
#[derive(Debug, Clone, Copy)]
pub struct MemoryCase {
    pub name: &'static str,
    pub finding: Option<&'static str>,
    /// `deviceProperties` name and the records' `Device Type` (1 CUDA, 6 HIP).
    pub device: &'static str,
    pub device_type: i64,
    build: fn(&mut Writer<'_>) -> io::Result<()>,
}

/// Every planted memory case.
pub fn cases() -> Vec<MemoryCase> {
    vec![
        MemoryCase {
            name: "memory_activations",
            finding: Some("activations_for_backward"),
            device: "NVIDIA H100 80GB HBM3",
            device_type: 1,
            build: activations,
        },
        MemoryCase {
            name: "memory_leak",
            finding: Some("growth_per_step"),
            device: "NVIDIA H100 80GB HBM3",
            device_type: 1,
            build: leak,
        },
        MemoryCase {
            name: "memory_fragmentation",
            finding: Some("fragmentation"),
            device: "AMD Instinct MI300X",
            device_type: 6,
            build: fragmentation,
        },
        MemoryCase {
            name: "memory_unfused_attention",
            finding: Some("large_temporary"),
            device: "NVIDIA H100 80GB HBM3",
            device_type: 1,
            build: unfused_attention,
        },
        MemoryCase {
            name: "memory_free_without_allocation",
            finding: None,
            device: "NVIDIA H100 80GB HBM3",
            device_type: 1,
            build: free_without_allocation,
        },
        MemoryCase {
            name: "memory_blas_workspace",
            finding: Some("blas_workspace"),
            device: "AMD Instinct MI300X",
            device_type: 6,
            build: blas_workspace,
        },
        MemoryCase {
            name: "memory_warm_cache",
            finding: None,
            device: "NVIDIA H100 80GB HBM3",
            device_type: 1,
            build: warm_cache,
        },
        MemoryCase {
            name: "memory_healthy",
            finding: None,
            device: "AMD Instinct MI300X",
            device_type: 6,
            build: healthy,
        },
    ]
}

pub fn case(name: &str) -> Option<MemoryCase> {
    cases().into_iter().find(|c| c.name == name)
}

/// Writes a case's trace and returns its truth.
pub fn write_case(c: &MemoryCase, w: &mut impl Write) -> io::Result<MemoryTruth> {
    write!(
        w,
        "{{\"schemaVersion\": 1, \"deviceProperties\": [{{\"id\": 0, \"name\": {}}}],\n\"traceEvents\": [\n",
        json_str(c.device)
    )?;
    let mut events = Vec::new();
    let mut wr = Writer {
        ev: EventWriter::new(&mut events),
        cpu: 1_000_000,
        device_type: c.device_type,
        modules: Vec::new(),
        alloc: Allocator::default(),
        truth: MemoryTruth {
            device: "GPU0".into(),
            finding: c.finding,
            ..MemoryTruth::default()
        },
        ext: 1,
    };
    (c.build)(&mut wr)?;
    let mut truth = wr.finish();
    truth.finding = c.finding;
    w.write_all(&events)?;
    w.write_all(b"\n]}\n")?;
    Ok(truth)
}

/// A case's trace as bytes, with its truth.
pub fn case_bytes(c: &MemoryCase) -> (Vec<u8>, MemoryTruth) {
    let mut out = Vec::new();
    // Writing to a Vec cannot fail.
    let truth = write_case(c, &mut out).unwrap_or_default();
    (out, truth)
}

/// The caching allocator and what it has seen.
#[derive(Default)]
struct Allocator {
    allocated: i64,
    reserved: i64,
    next_addr: i64,
    /// Live allocations: address → (bytes, module, segment).
    live: BTreeMap<i64, (i64, String, u32)>,
    /// Cached free blocks: address → (bytes, segment).
    cached: BTreeMap<i64, (i64, u32)>,
    segments: u32,
    peak: i64,
    live_at_peak: Vec<(String, i64)>,
    reserved_peak: i64,
    unused_at_reserved_peak: i64,
}

/// Writes ops, modules, steps and the allocator's records.
pub struct Writer<'a> {
    ev: EventWriter<'a, Vec<u8>>,
    cpu: Nanos,
    device_type: i64,
    modules: Vec<String>,
    alloc: Allocator,
    truth: MemoryTruth,
    ext: i64,
}

impl Writer<'_> {
    fn record(&mut self, addr: i64, bytes: i64) -> io::Result<()> {
        let a = &self.alloc;
        let text = format!(
            "  {{\"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"s\": \"t\", \"name\": \"[memory]\", \"pid\": {PID}, \"tid\": {TID}, \"ts\": {}, \"args\": {{\"Total Reserved\": {}, \"Total Allocated\": {}, \"Bytes\": {bytes}, \"Addr\": {addr}, \"Device Id\": 0, \"Device Type\": {}}}}}",
            micros(self.cpu),
            a.reserved,
            a.allocated,
            self.device_type
        );
        self.ev.event_text(&text)?;
        self.cpu += 1_000;
        Ok(())
    }

    /// Allocates `bytes` on the GPU; returns the address.
    fn malloc(&mut self, bytes: i64) -> io::Result<i64> {
        let a = &mut self.alloc;
        // Best fit among the cached blocks, split when larger (as PyTorch's allocator does);
        // else a new segment.
        let fit = a
            .cached
            .iter()
            .filter(|(_, &(size, _))| size >= bytes)
            .min_by_key(|(&addr, &(size, _))| (size, addr))
            .map(|(&addr, &block)| (addr, block));
        let (addr, segment) = match fit {
            Some((addr, (size, segment))) => {
                a.cached.remove(&addr);
                if size > bytes {
                    a.cached.insert(addr + bytes, (size - bytes, segment));
                }
                (addr, segment)
            }
            None => {
                a.reserved += bytes;
                let addr = 0x7f00_0000_0000 + a.next_addr;
                a.next_addr += (bytes + 511) / 512 * 512;
                a.segments += 1;
                (addr, a.segments)
            }
        };
        a.allocated += bytes;
        let module = self.modules.last().cloned().unwrap_or_default();
        a.live.insert(addr, (bytes, module, segment));
        if a.reserved > a.reserved_peak {
            a.reserved_peak = a.reserved;
            a.unused_at_reserved_peak = a.reserved - a.allocated;
        }
        if a.allocated > a.peak {
            a.peak = a.allocated;
            let mut by: BTreeMap<String, i64> = BTreeMap::new();
            for (b, m, _) in a.live.values() {
                *by.entry(m.clone()).or_default() += b;
            }
            let mut v: Vec<(String, i64)> = by.into_iter().collect();
            v.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(&y.0)));
            a.live_at_peak = v;
        }
        self.record(addr, bytes)?;
        Ok(addr)
    }

    fn free(&mut self, addr: i64) -> io::Result<()> {
        let a = &mut self.alloc;
        let Some((bytes, _, segment)) = a.live.remove(&addr) else {
            return Ok(());
        };
        a.allocated -= bytes;
        // Cached, merged with free neighbours of its segment.
        let (mut start, mut size) = (addr, bytes);
        if let Some((&next, &(n, seg))) = a.cached.range(addr + bytes..).next() {
            if next == addr + bytes && seg == segment {
                a.cached.remove(&next);
                size += n;
            }
        }
        if let Some((&prev, &(p, seg))) = a.cached.range(..addr).next_back() {
            if prev + p == addr && seg == segment {
                a.cached.remove(&prev);
                start = prev;
                size += p;
            }
        }
        a.cached.insert(start, (size, segment));
        self.record(addr, -bytes)
    }

    /// A free of memory allocated before the trace began (the allocator's totals drop).
    fn free_unseen(&mut self, addr: i64, bytes: i64) -> io::Result<()> {
        self.alloc.allocated -= bytes;
        self.truth.frees_without_allocation += 1;
        self.record(addr, -bytes)
    }

    /// A reserve cached before the trace began (a warm-up's): one free block the trace's
    /// allocations are carved from. The reserve never grows in the trace.
    fn warm_reserve(&mut self, bytes: i64) {
        let a = &mut self.alloc;
        a.segments += 1;
        a.cached.insert(0x7d00_0000_0000, (bytes, a.segments));
        a.reserved += bytes;
        a.reserved_peak = a.reserved;
    }

    /// Memory allocated before the trace began.
    fn preallocated(&mut self, bytes: i64) {
        self.alloc.allocated += bytes;
        self.alloc.reserved += bytes;
    }

    fn span(
        &mut self,
        cat: &str,
        name: &str,
        args: &str,
        body: impl FnOnce(&mut Self) -> io::Result<()>,
    ) -> io::Result<()> {
        let start = self.cpu;
        self.cpu += 2_000;
        body(self)?;
        self.cpu += 2_000;
        self.ev
            .complete(cat, name, PID, TID, start, self.cpu - start, args)?;
        self.cpu += 1_000;
        Ok(())
    }

    fn op(
        &mut self,
        name: &str,
        dims: &str,
        body: impl FnOnce(&mut Self) -> io::Result<()>,
    ) -> io::Result<()> {
        let types = dims.matches('[').count().saturating_sub(1).max(1);
        let types = vec!["\"c10::BFloat16\""; types].join(", ");
        let args = format!(
            "\"External id\": {}, \"Input Dims\": {dims}, \"Input type\": [{types}]",
            self.ext
        );
        self.ext += 1;
        self.span("cpu_op", name, &args, body)
    }

    fn module(
        &mut self,
        class: &str,
        body: impl FnOnce(&mut Self) -> io::Result<()>,
    ) -> io::Result<()> {
        self.modules.push(class.to_owned());
        let name = format!("nn.Module: {class}");
        self.span(
            "python_function",
            &name,
            "\"Python id\": 1, \"Python parent id\": 0, \"Python module id\": 1",
            body,
        )?;
        self.modules.pop();
        Ok(())
    }

    fn step(&mut self, n: u32, body: impl FnOnce(&mut Self) -> io::Result<()>) -> io::Result<()> {
        self.span("user_annotation", &format!("ProfilerStep#{n}"), "", body)
    }

    fn finish(self) -> MemoryTruth {
        let a = self.alloc;
        MemoryTruth {
            peak_allocated: a.peak,
            peak_reserved: a.reserved_peak,
            live_at_peak: a.live_at_peak,
            unused_at_reserved_peak: a.unused_at_reserved_peak,
            never_freed: a.live.len() as u64,
            never_freed_bytes: a.live.values().map(|(b, ..)| b).sum(),
            ..self.truth
        }
    }
}

/// A training step's forward keeps each block's activation for the backward: the peak comes
/// at the start of the backward, held by four `Block_i` modules' 256 MiB each.
fn activations(w: &mut Writer<'_>) -> io::Result<()> {
    for s in 1..=3 {
        w.step(s, |w| {
            let mut saved = Vec::new();
            for b in 0..4 {
                w.module(&format!("Block_{b}"), |w| {
                    w.op("aten::linear", "[[8, 4096, 2048], [4096, 2048]]", |w| {
                        let tmp = w.malloc(16 * MIB)?;
                        saved.push(w.malloc(256 * MIB)?);
                        w.free(tmp)
                    })
                })?;
            }
            for act in saved.into_iter().rev() {
                w.op(
                    "autograd::engine::evaluate_function: MmBackward0",
                    "[]",
                    |w| {
                        let grad = w.malloc(64 * MIB)?;
                        w.free(act)?;
                        w.free(grad)
                    },
                )?;
            }
            Ok(())
        })?;
    }
    Ok(())
}

/// Each inference step appends its 8 MiB logits to a list that is never cleared.
fn leak(w: &mut Writer<'_>) -> io::Result<()> {
    w.truth.growth_per_step = 8 * MIB;
    for s in 1..=5 {
        w.step(s, |w| {
            w.module("Model_0", |w| {
                w.op("aten::linear", "[[64, 4096], [4096, 4096]]", |w| {
                    let out = w.malloc(32 * MIB)?;
                    w.free(out)
                })?;
                // The logits, appended to a list the loop never clears.
                w.op("aten::linear", "[[1024, 4096], [4096, 4096]]", |w| {
                    w.malloc(8 * MIB).map(|_| ())
                })
            })
        })?;
    }
    Ok(())
}

/// 64 blocks of 16 MiB, every other one freed, then 128 MiB tensors that fit none of the
/// 512 MiB of cached holes: the reserve grows while a third of it is unused.
fn fragmentation(w: &mut Writer<'_>) -> io::Result<()> {
    w.step(1, |w| {
        w.module("Loader_0", |w| {
            let mut blocks = Vec::new();
            for _ in 0..64 {
                w.op("aten::empty", "[[4096, 2048]]", |w| {
                    blocks.push(w.malloc(16 * MIB)?);
                    Ok(())
                })?;
            }
            for b in blocks.iter().step_by(2) {
                w.op("aten::detach_", "[[4096, 2048]]", |w| w.free(*b))?;
            }
            for _ in 0..4 {
                w.op("aten::cat", "[[16384, 2048], [16384, 2048]]", |w| {
                    w.malloc(128 * MIB).map(|_| ())
                })?;
            }
            Ok(())
        })
    })
}

/// Unfused attention: a batched matmul of Q [16, 4096, 64] by Kᵀ [16, 64, 4096] makes a
/// 512 MiB bf16 score matrix from 16 MiB of inputs, in two layers. The second layer runs while an
/// 8 MiB residual is held, so the peak (scores and softmax copy both live) is in
/// `SelfAttention_1`, whichever layer's call the rule takes as the largest.
fn unfused_attention(w: &mut Writer<'_>) -> io::Result<()> {
    fn layer(w: &mut Writer<'_>, module: &str) -> io::Result<()> {
        w.module(module, |w| {
            let mut scores = 0;
            w.op("aten::bmm", "[[16, 4096, 64], [16, 64, 4096]]", |w| {
                scores = w.malloc(512 * MIB)?;
                Ok(())
            })?;
            let mut probs = 0;
            w.op("aten::softmax", "[[16, 4096, 4096], []]", |w| {
                probs = w.malloc(512 * MIB)?;
                w.free(scores)
            })?;
            w.op("aten::bmm", "[[16, 4096, 4096], [16, 4096, 64]]", |w| {
                let out = w.malloc(8 * MIB)?;
                w.free(probs)?;
                w.free(out)
            })
        })
    }
    for s in 1..=2 {
        w.step(s, |w| {
            layer(w, "SelfAttention_0")?;
            let mut residual = 0;
            w.op("aten::add", "[[4096, 512], [4096, 512]]", |w| {
                residual = w.malloc(8 * MIB)?;
                Ok(())
            })?;
            layer(w, "SelfAttention_1")?;
            w.op("aten::detach_", "[[4096, 512]]", |w| w.free(residual))
        })?;
    }
    Ok(())
}

/// Two frees of memory allocated before profiling began, beside ordinary work.
fn free_without_allocation(w: &mut Writer<'_>) -> io::Result<()> {
    w.preallocated(30 * MIB);
    w.step(1, |w| {
        w.op("aten::add", "[[1024, 1024], [1024, 1024]]", |w| {
            let out = w.malloc(2 * MIB)?;
            w.free(out)
        })?;
        w.op("aten::detach_", "[[1024, 1024]]", |w| {
            w.free_unseen(0x7e00_0000_0000, 10 * MIB)?;
            w.free_unseen(0x7e00_0100_0000, 20 * MIB)
        })
    })
}

/// A small model on ROCm: each addmm takes hipBLASLt's 76 MiB workspace through aten::empty
/// for the call, far more than its 2 MiB output.
fn blas_workspace(w: &mut Writer<'_>) -> io::Result<()> {
    for s in 1..=2 {
        w.step(s, |w| {
            w.module("Linear_0", |w| {
                for _ in 0..4 {
                    w.op("aten::addmm", "[[1024], [512, 1024], [1024, 1024]]", |w| {
                        let mut ws = 0;
                        w.op("aten::empty", "[[]]", |w| {
                            ws = w.malloc(76 * MIB)?;
                            Ok(())
                        })?;
                        let out = w.malloc(MIB)?;
                        w.free(ws)?;
                        w.free(out)
                    })?;
                }
                Ok(())
            })
        })?;
    }
    Ok(())
}

/// A 4 GiB reserve cached before the trace, mostly unused while the steps run in it: the cache
/// working (its reserve never grows here), not fragmentation.
fn warm_cache(w: &mut Writer<'_>) -> io::Result<()> {
    w.preallocated(512 * MIB);
    w.warm_reserve(4096 * MIB);
    for s in 1..=3 {
        w.step(s, |w| {
            w.op("aten::linear", "[[64, 4096], [4096, 4096]]", |w| {
                let a = w.malloc(32 * MIB)?;
                w.free(a)
            })
        })?;
    }
    Ok(())
}

/// Balanced inference steps whose temporaries reuse the cached blocks.
fn healthy(w: &mut Writer<'_>) -> io::Result<()> {
    for s in 1..=3 {
        w.step(s, |w| {
            w.module("Model_0", |w| {
                w.op("aten::linear", "[[64, 4096], [4096, 4096]]", |w| {
                    let a = w.malloc(32 * MIB)?;
                    let b = w.malloc(4 * MIB)?;
                    w.free(a)?;
                    w.free(b)
                })
            })
        })?;
    }
    Ok(())
}
