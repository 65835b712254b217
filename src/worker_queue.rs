//! Messages for a worker that has not said `ready` yet. Trunk's loader instantiates the worker's
//! wasm asynchronously and the worker installs its message handler only then, so a file handed
//! to it in its first ~100-200 ms was dispatched to no listener and lost (issue #14: a page
//! opened from a link with a file dropped at once sat at "Ready"). Until `ready`, messages wait
//! here and are sent, in order, when it comes.

use std::cell::RefCell;

use wasm_bindgen::JsValue;
use web_sys::Worker;

thread_local! {
    /// `Some`: the current worker is starting and these wait for its `ready`; `None`: it listens.
    static PENDING: RefCell<Option<Vec<JsValue>>> = const { RefCell::new(None) };
}

/// A new worker is starting: hold its messages until it is ready (any still queued for a
/// replaced worker are dropped with it).
pub fn starting() {
    PENDING.with(|p| *p.borrow_mut() = Some(Vec::new()));
}

/// Posts now, or queues while the worker starts.
pub fn post(worker: &Worker, msg: &JsValue) -> Result<(), JsValue> {
    let queued = PENDING.with(|p| match p.borrow_mut().as_mut() {
        Some(q) => {
            q.push(msg.clone());
            true
        }
        None => false,
    });
    if queued {
        Ok(())
    } else {
        worker.post_message(msg)
    }
}

/// The worker said `ready`: sends what waited, in order, and returns how many.
pub fn ready(worker: &Worker) -> usize {
    let queued = PENDING.with(|p| p.borrow_mut().take()).unwrap_or_default();
    for m in &queued {
        let _ = worker.post_message(m);
    }
    queued.len()
}
