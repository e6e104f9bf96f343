package io.nixlconnect.transport;

/** Kinds of memory a transport registers, as NIXL names them. */
public enum MemoryType {
    /** Host memory. */
    DRAM,
    /** GPU device memory. */
    VRAM
}
