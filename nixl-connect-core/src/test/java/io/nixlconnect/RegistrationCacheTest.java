package io.nixlconnect;

import static org.assertj.core.api.Assertions.assertThat;

import io.nixlconnect.transport.MemoryRegion;
import io.nixlconnect.transport.MemoryRegistration;
import io.nixlconnect.transport.MemoryType;
import io.nixlconnect.transport.PassiveWindow;
import io.nixlconnect.transport.PeerCounts;
import io.nixlconnect.transport.TransferHandle;
import io.nixlconnect.transport.TransferOp;
import io.nixlconnect.transport.TransportAgent;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** Counted holds: a block list's slices of one pool hold its registration n times in one call. */
class RegistrationCacheTest {

    private final AtomicInteger registered = new AtomicInteger();
    private final AtomicInteger deregistered = new AtomicInteger();
    private final RegistrationCache cache = new RegistrationCache(new CountingAgent(), "counting");
    private final MemoryRegion pool = new MemoryRegion(0x10000, 1 << 20, MemoryType.DRAM, 0);

    @Test
    void holdsOfManyAtOnceRegisterOnceAndDeregisterAfterTheLastRelease() {
        cache.hold(pool, 1024);
        cache.hold(pool); // another operation
        assertThat(registered).hasValue(1);
        assertThat(cache.registeredBytes()).isEqualTo(1 << 20);
        cache.release(pool, 1024);
        assertThat(deregistered).hasValue(0);
        cache.release(pool);
        assertThat(deregistered).hasValue(1);
        assertThat(cache.registeredBytes()).isZero();
    }

    @Test
    void aPartialReleaseOfAManyHoldKeepsTheRegistration() {
        cache.hold(pool, 3);
        cache.release(pool, 2);
        assertThat(deregistered).hasValue(0);
        cache.release(pool, 1);
        assertThat(deregistered).hasValue(1);
        cache.release(pool, 1); // nothing held any more: nothing happens
        assertThat(deregistered).hasValue(1);
    }

    private final class CountingAgent implements TransportAgent {
        @Override
        public String name() {
            return "counting";
        }

        @Override
        public Map<String, Object> details() {
            return Map.of();
        }

        @Override
        public boolean isServing() {
            return true;
        }

        @Override
        public PeerCounts peerCounts() {
            return PeerCounts.NONE;
        }

        @Override
        public MemoryRegistration registerMemory(MemoryRegion region) {
            registered.incrementAndGet();
            return new MemoryRegistration() {
                @Override
                public MemoryRegion region() {
                    return region;
                }

                @Override
                public void close() {
                    deregistered.incrementAndGet();
                }
            };
        }

        @Override
        public byte[] localMetadata() {
            throw new UnsupportedOperationException();
        }

        @Override
        public String loadRemoteAgent(byte[] metadata) {
            throw new UnsupportedOperationException();
        }

        @Override
        public int remoteAgentCount() {
            return 0;
        }

        @Override
        public TransferHandle postTransfer(TransferOp op, List<MemoryRegion> local, String remoteAgentName,
                List<MemoryRegion> remote, byte[] notification) {
            throw new UnsupportedOperationException();
        }

        @Override
        public PassiveWindow openWindow(TransferOp access, List<MemoryRegion> regions, byte[] notification,
                int notifications) {
            throw new UnsupportedOperationException();
        }

        @Override
        public void close() {
        }
    }
}
