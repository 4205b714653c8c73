// Package nvmlcode says what NVML's error codes mean for a GPU's health,
// as nvml.h describes them: which say the GPU or driver lacks a feature,
// and which say the GPU needs attention.
package nvmlcode

import "github.com/NVIDIA/go-nvml/pkg/nvml"

// Unsupported reports whether ret says the GPU or driver lacks the
// feature (NOT_SUPPORTED, or a library without the function): nothing to
// judge, a check passes.
func Unsupported(ret nvml.Return) bool {
	return ret == nvml.ERROR_NOT_SUPPORTED || ret == nvml.ERROR_FUNCTION_NOT_FOUND || ret == nvml.ERROR_DEPRECATED
}

// Hard reports whether an error is the GPU's (or its driver's) fault: it
// needs a reset (RESET_REQUIRED), has an internal driver error (UNKNOWN),
// an interrupt problem (IRQ_ISSUE), a corrupted infoROM, missing power
// cables (INSUFFICIENT_POWER), a driver/library mismatch, an unloaded
// driver, or is blocked by the operating system. Such a GPU fails its
// check: CUDA will not run well on it either.
//
// The other errors say that NVML could not answer now, not that the GPU
// is bad: TIMEOUT, INSUFFICIENT_RESOURCES, NOT_READY, IN_USE, MEMORY
// (host memory), NO_DATA, NO_PERMISSION (the agent's privileges),
// INVALID_ARGUMENT and the version mismatches of a newer NVML header.
// Taking a GPU off the market, and moving its tenant, for a reading NVML
// could not take would do more harm than the rare fault it might hide.
// GPU_IS_LOST is neither: the GPU is gone, and reported missing.
func Hard(ret nvml.Return) bool {
	switch ret {
	case nvml.ERROR_RESET_REQUIRED, nvml.ERROR_UNKNOWN, nvml.ERROR_IRQ_ISSUE, nvml.ERROR_CORRUPTED_INFOROM,
		nvml.ERROR_INSUFFICIENT_POWER, nvml.ERROR_LIB_RM_VERSION_MISMATCH, nvml.ERROR_DRIVER_NOT_LOADED,
		nvml.ERROR_UNINITIALIZED, nvml.ERROR_OPERATING_SYSTEM, nvml.ERROR_GPU_NOT_FOUND:
		return true
	}
	return false
}
