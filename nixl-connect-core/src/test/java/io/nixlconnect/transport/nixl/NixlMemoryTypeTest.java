package io.nixlconnect.transport.nixl;

import static org.assertj.core.api.Assertions.assertThat;

import io.nixlconnect.transport.MemoryType;
import org.junit.jupiter.api.Test;

/** How our memory types reach NIXL: XPU memory goes as VRAM, as Python Dynamo hands it to NIXL. */
class NixlMemoryTypeTest {

    @Test
    void eachMemoryTypeMapsToNixlsSegment() {
        assertThat(NixlRequests.memType(MemoryType.DRAM)).isEqualTo(NixlCapi.MEM_DRAM).isZero();
        assertThat(NixlRequests.memType(MemoryType.VRAM)).isEqualTo(NixlCapi.MEM_VRAM).isEqualTo(1);
        assertThat(NixlRequests.memType(MemoryType.XPU)).isEqualTo(NixlCapi.MEM_VRAM);
    }
}
