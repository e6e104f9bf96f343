package io.nixlconnect.transport;

/** Kinds of memory a transport registers, as NIXL names them. */
public enum MemoryType {
    /** Host memory. */
    DRAM,
    /** CUDA device memory. */
    VRAM,
    /**
     * Intel GPU (XPU) device memory. NIXL registers and moves it as VRAM (Python Dynamo passes its XPU tensors
     * to NIXL the same way); the embedded transport cannot reach it and refuses it.
     */
    XPU
}
