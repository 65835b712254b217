//! The finding for an fp32 buffer converted to the compute dtype on every read
//! (`standalone::buffer_casts`): allocate it in that dtype and the conversions go.

use super::patterns::pattern_bottleneck;
use super::*;

const HOME: [&str; 3] = ["aten::copy_", "aten::_to_copy", "aten::to"];

pub(super) fn add_buffer_casts(f: &mut CategoryFindings, inp: &Inputs<'_>) {
    let Some(c) = inp.patterns.buffer_casts.as_ref() else {
        return;
    };
    if pattern_parts::home(inp, &HOME, HOME[0]) != f.category {
        return;
    }
    // Read once a step it is a conversion of the step's input; in every step of two or more,
    // a buffer kept in the wrong dtype.
    let every = c.steps == 0 || c.steps_with * 2 > c.steps;
    // A half-precision buffer's writes move half the bytes; its reads need no conversion.
    let saving = c.ms + c.write_ms / 2.0;
    let time = c.ms + c.write_ms;
    if !every || c.steps_with < 2 && c.steps > 0 || inp.share(saving) < rules::MIN_SHARE_PCT {
        return;
    }
    let dims = |d: &[i64]| d.iter().map(i64::to_string).collect::<Vec<_>>().join(", ");
    let at = if c.frame.is_empty() {
        String::new()
    } else {
        format!(", in {}", code(&c.frame))
    };
    let writes = if c.writes > 0 {
        format!(
            " Its {} writes take `{}` values and convert them to fp32 on the way in ({:.3} ms).",
            c.writes, c.to, c.write_ms
        )
    } else {
        String::new()
    };
    let evidence = format!(
        "{} conversions from fp32 to `{}`{at} read slices such as [{}] of an fp32 buffer [{}] (the slice's strides step over the whole buffer) in {} of the {} marked steps: {:.3} ms of kernels reading {:.2} GB, twice the bytes the buffer holds in `{}`, and writing a fresh copy that its consumer reads again. The buffer was allocated without a dtype (fp32 by default) while the model computes in `{}`.{writes}",
        c.calls,
        c.to,
        dims(&c.slice),
        dims(&c.buffer),
        c.steps_with,
        c.steps,
        c.ms,
        c.read_bytes / 1e9,
        c.to,
        c.to,
    );
    let action = format!(
        "Allocate the buffer in the model's dtype (`torch.empty(..., dtype={})`, or FP8 with its scales for a KV cache): its consumers then read the slice in place, no conversion runs, and the buffer takes half the memory.",
        if c.to == "c10::Half" { "torch.float16" } else { "torch.bfloat16" }
    );
    let mut b = pattern_bottleneck(
        f.category,
        &HOME,
        format!(
            "An fp32 buffer [{}] converted to `{}` on every read",
            dims(&c.buffer),
            c.to
        ),
        time,
        evidence.clone(),
        &action,
        "Not a kernel issue: the conversions run at bandwidth; their bytes are what goes.",
        ProjectionKind::Saving,
        rules::saving_projection(time, time - saving, inp.compute_ms()),
        inp,
    );
    b.scope = Some(super::merge::Scope::of_ops(
        vec![("aten::copy_".to_owned(), c.ms)],
        c.calls as u64,
    ));
    b.fix = vec![(
        "remove",
        format!("events:{}", pattern_parts::event_list(&c.kernels)),
    )];
    if !c.write_kernels.is_empty() {
        b.fix.push((
            "scale",
            format!("events:{}=0.5", pattern_parts::event_list(&c.write_kernels)),
        ));
    }
    b.causes.push(pattern_parts::named(
        "fp32_buffer_cast_every_read",
        "an fp32 buffer converted to the compute dtype on every read".into(),
        evidence,
        &action,
        Confidence::High,
    ));
    f.bottlenecks.push(b);
}
