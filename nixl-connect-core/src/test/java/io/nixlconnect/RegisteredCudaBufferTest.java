package io.nixlconnect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.nixlconnect.transport.embedded.EmbeddedSettings;
import com.sun.jna.Memory;
import io.nixlconnect.cuda.Cuda;
import io.nixlconnect.cuda.CudaDeviceBuffer;
import io.nixlconnect.cuda.CudaTestDoubles;
import io.nixlconnect.cuda.PinnedHostBuffer;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A CUDA buffer registered through {@link Descriptor#registerMemory} cannot be freed until the registration
 * ends: otherwise {@code cuMemAlloc} could hand the same address to a new buffer and the registration cache
 * would serve it the stale registration. Runs without a GPU, on buffers from a test double of the driver
 * layer over ordinary host memory.
 */
class RegisteredCudaBufferTest {

    private final List<Long> freed = new ArrayList<>();
    private final Memory host = new Memory(4096);
    private Connector connector;

    @BeforeEach
    void start() {
        connector = new Connector(ConnectorOptions.builder().transports(EmbeddedSettings.defaults())
                .workerId("registered-buffer").build());
    }

    @AfterEach
    void stop() {
        connector.close();
        host.close();
    }

    @Test
    void aRegisteredBufferRefusesToBeFreedUntilItsDescriptorCloses() {
        PinnedHostBuffer buffer = CudaTestDoubles.pinnedBuffer(Memory.nativeValue(host), host.size(), freed);
        Descriptor descriptor = new Descriptor(buffer.address(), buffer.size(), Device.CPU, buffer);

        descriptor.registerMemory(connector);

        assertThat(descriptor.isRegistered(connector)).isTrue();
        assertThat(buffer.liveUses()).isEqualTo(1);
        assertThatThrownBy(buffer::close)
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("still registered");
        assertThat(buffer.isClosed()).isFalse();
        assertThat(freed).isEmpty();

        descriptor.close();
        assertThat(connector.registeredBytes()).isZero();
        buffer.close();

        assertThat(buffer.isClosed()).isTrue();
        assertThat(freed).containsExactly(buffer.address());
    }

    @Test
    void registeringTwiceHoldsOneUseAndOperationsAddTheirOwn() {
        PinnedHostBuffer buffer = CudaTestDoubles.pinnedBuffer(Memory.nativeValue(host), host.size(), freed);
        try (Descriptor descriptor = new Descriptor(buffer.address(), buffer.size(), Device.CPU, buffer)) {
            descriptor.registerMemory(connector);
            descriptor.registerMemory(connector);
            assertThat(buffer.liveUses()).isEqualTo(1);

            ReadableOperation readable = connector.createReadable(descriptor);
            assertThat(buffer.liveUses()).isEqualTo(2);
            readable.close();
            assertThat(buffer.liveUses()).as("the registration still holds its use").isEqualTo(1);
        }
        assertThat(buffer.liveUses()).isZero();
        buffer.close();
        assertThat(freed).hasSize(1);
    }

    @Test
    void aFreedBufferCannotBeRegistered() {
        PinnedHostBuffer buffer = CudaTestDoubles.pinnedBuffer(Memory.nativeValue(host), host.size(), freed);
        Descriptor descriptor = new Descriptor(buffer.address(), buffer.size(), Device.CPU, buffer);
        buffer.close();

        assertThatThrownBy(() -> descriptor.registerMemory(connector))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("is closed");
        assertThat(descriptor.isRegistered(connector)).isFalse();
        assertThat(connector.registeredBytes()).isZero();
        descriptor.close();
    }

    @Test
    void aRefusedRegistrationLeavesTheBufferFreeable() {
        // Without a GPU the embedded transport refuses cuda:0 memory; the use taken for it must be given back.
        org.junit.jupiter.api.Assumptions.assumeFalse(Cuda.isAvailable(), "a GPU is present: the registration succeeds");
        CudaDeviceBuffer buffer = CudaTestDoubles.deviceBuffer(0, Memory.nativeValue(host), host.size(), freed);
        try (Descriptor descriptor = new Descriptor(buffer)) {
            assertThatThrownBy(() -> descriptor.registerMemory(connector)).hasMessageContaining("GPU support is unavailable");
            assertThat(descriptor.isRegistered(connector)).isFalse();
        }
        assertThat(buffer.liveUses()).isZero();
        assertThatCode(buffer::close).doesNotThrowAnyException();
        assertThat(freed).containsExactly(buffer.address());
    }
}
