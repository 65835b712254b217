//! The runtime calls HTA's critical path treats specially, by name (HTA head f4d0062's lists,
//! `../shared/docs/critical_path_spec.md`). HIP calls are named where HTA names them, and only
//! there: matching HTA is the point of these lists.

/// Calls that enqueue GPU work HTA can tie to a kernel (its "runtime launch events"): the
/// launch-delay edge and the launch queue count only these. `cudaGraphLaunch` /
/// `hipGraphLaunch` are not among them (HTA issue #290).
pub fn is_launch(name: &str) -> bool {
    matches!(
        name,
        "cudaLaunchKernel"
            | "cudaLaunchKernelExC"
            | "cuLaunchKernel"
            | "cuLaunchKernelEx"
            | "cudaMemcpyAsync"
            | "cudaMemsetAsync"
            | "hipLaunchKernel"
            | "hipExtModuleLaunchKernel"
            | "hipMemcpyAsync"
            | "hipMemsetAsync"
            | "hipMemcpyWithStream"
    )
}

/// Calls whose exit edge weighs 0: the time they block is charged to the GPU through sync
/// edges. `cudaMemcpyAsync` is on HTA's list but takes the runtime lock (below), which gives
/// it its full duration at head.
pub fn is_blocking(name: &str) -> bool {
    matches!(
        name,
        "cudaDeviceSynchronize"
            | "cudaStreamSynchronize"
            | "cudaEventQuery"
            | "cudaEventSynchronize"
            | "cudaMemcpy"
    )
}

/// Calls that take the CUDA runtime's lock: HTA head chains them across threads in the order
/// they complete.
pub fn takes_runtime_lock(name: &str) -> bool {
    matches!(
        name,
        "cudaLaunchKernel" | "cudaMemcpyAsync" | "cudaHostAlloc"
    )
}

/// The call that records a CUDA event (event syncs wait for the last launch before it).
pub fn is_event_record(name: &str) -> bool {
    name == "cudaEventRecord"
}

/// HTA's communication kernels (`is_comm_kernel`: a name matching `^nccl.*Kernel`), charged
/// to `gpu_communication_bound`.
pub fn is_comm_kernel(name: &str) -> bool {
    name.strip_prefix("nccl")
        .is_some_and(|rest| rest.contains("Kernel"))
}

/// The autograd engine's events: the thread holding them is the backward thread.
pub fn is_autograd(name: &str) -> bool {
    name.starts_with("autograd::engine::evaluate_function")
}

/// An autograd engine event for the replay's hand-over: `evaluate_function` frames, or a
/// backward node itself (`AddmmBackward0`, `CudnnConvolutionBackward` in PyTorch 1.x traces,
/// which have no `evaluate_function` frames; `torch::autograd::AccumulateGrad`). Only the
/// thread running them matters, and a name ending `Backward` plus digits is the node class
/// autograd generates for each differentiable op.
pub fn is_autograd_node(name: &str) -> bool {
    is_autograd(name)
        || name == "torch::autograd::AccumulateGrad"
        || name
            .trim_end_matches(|c: char| c.is_ascii_digit())
            .ends_with("Backward")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backward_nodes_are_autograd_events_for_the_replay() {
        for n in [
            "autograd::engine::evaluate_function: AddmmBackward0",
            "CudnnConvolutionBackward",
            "AddmmBackward0",
            "torch::autograd::AccumulateGrad",
        ] {
            assert!(is_autograd_node(n), "{n}");
        }
        for n in [
            "aten::convolution_backward",
            "Optimizer.step#SGD.step",
            "Backward pass",
        ] {
            assert!(!is_autograd_node(n), "{n}");
        }
        assert!(!is_autograd("CudnnConvolutionBackward"));
    }

    #[test]
    fn names_follow_hta() {
        assert!(is_comm_kernel(
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
        ));
        assert!(is_comm_kernel("ncclKernel_AllGather"));
        assert!(!is_comm_kernel("void at::native::nccl_helper()"));
        assert!(is_launch("hipExtModuleLaunchKernel") && !is_launch("cudaGraphLaunch"));
        assert!(is_blocking("cudaStreamSynchronize") && !is_blocking("cudaMemcpyAsync"));
        assert!(takes_runtime_lock("cudaMemcpyAsync"));
    }
}
