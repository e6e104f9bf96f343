package io.nixlconnect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/** Host memory the system cannot give is the library's exception, naming the size, not an OutOfMemoryError. */
class DescriptorAllocationTest {

    @Test
    void aSizeNoSystemCanGiveThrowsTheLibrarysExceptionNamingIt() {
        long exbibyte = 1L << 60; // beyond any x86-64 address space: malloc fails whatever the overcommit policy
        assertThatThrownBy(() -> Descriptor.allocate(exbibyte))
                .isExactlyInstanceOf(NixlConnectException.class)
                .hasMessage("Cannot allocate 1152921504606846976 bytes (1073741824.0 GiB) of host memory: the system "
                        + "refused it (malloc failed); allocate less, or free memory")
                .hasCauseInstanceOf(OutOfMemoryError.class);
        assertThatThrownBy(() -> Descriptor.allocate(Long.MAX_VALUE)).isExactlyInstanceOf(NixlConnectException.class)
                .hasMessageContaining(Long.toString(Long.MAX_VALUE) + " bytes");
    }

    @Test
    void aSizeThatFitsIsZeroedAndOwned() {
        try (Descriptor descriptor = Descriptor.allocate(4096)) {
            assertThat(descriptor.size()).isEqualTo(4096);
            assertThat(descriptor.toByteArray()).containsOnly(0);
        }
    }
}
