package io.nixlconnect.transport.embedded;

import static org.assertj.core.api.Assertions.assertThat;

import io.nixlconnect.transport.MemoryRegion;
import io.nixlconnect.transport.MemoryType;
import io.nixlconnect.transport.TransferOp;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** A request's ranges as the server checks them against a window while they arrive. */
class RequestedRangesTest {

    private static final long BASE = 0x10000;

    private final EmbeddedTransport transport = EmbeddedTransport.open(EmbeddedSettings.defaults());
    private final EmbeddedAgent agent = (EmbeddedAgent) transport.createAgent("ranges-test");
    private final EmbeddedWindow window = window();

    @AfterEach
    void close() {
        transport.close();
    }

    private EmbeddedWindow window() {
        MemoryRegion region = new MemoryRegion(BASE, 4096, MemoryType.DRAM, 0);
        agent.registerMemory(region);
        return (EmbeddedWindow) agent.openWindow(TransferOp.READ, List.of(region),
                "0123456789abcdef0123456789abcdef".getBytes());
    }

    @Test
    void keepsTheRangesInsideTheWindowInOrder() {
        RequestedRanges ranges = new RequestedRanges().reset(window, false);
        assertThat(ranges.accept(BASE + 100, 10)).isTrue();
        assertThat(ranges.accept(BASE, 4096)).isTrue();
        assertThat(ranges.refused()).isFalse();
        assertThat(ranges.size()).isEqualTo(2);
        assertThat(ranges.addresses()[0]).isEqualTo(BASE + 100);
        assertThat(ranges.lengths()[0]).isEqualTo(10);
        assertThat(ranges.addresses()[1]).isEqualTo(BASE);
        assertThat(ranges.lengths()[1]).isEqualTo(4096);
        assertThat(ranges.total()).isEqualTo(4106);
        assertThat(ranges.hostMemoryOnly()).isTrue();
        assertThat(ranges.region(0)).isEqualTo(new MemoryRegion(BASE, 4096, MemoryType.DRAM, 0));
        assertThat(ranges.region(1)).isEqualTo(ranges.region(0));
    }

    /** Each accepted range keeps the published region it lies in, in or out of the published order. */
    @Test
    void eachRangeKnowsItsRegion() {
        MemoryRegion first = new MemoryRegion(BASE + 0x10000, 4096, MemoryType.DRAM, 0);
        MemoryRegion second = new MemoryRegion(BASE + 0x20000, 4096, MemoryType.DRAM, 0);
        agent.registerMemory(first);
        agent.registerMemory(second);
        EmbeddedWindow blocks = (EmbeddedWindow) agent.openWindow(TransferOp.WRITE, List.of(second, first),
                "fedcba9876543210fedcba9876543210".getBytes());
        RequestedRanges ranges = new RequestedRanges().reset(blocks, false);
        assertThat(ranges.accept(second.address(), 4096)).isTrue();
        assertThat(ranges.accept(first.address(), 100)).isTrue();
        assertThat(ranges.accept(first.address() + 100, 3996)).isTrue();
        assertThat(ranges.accept(second.address() + 8, 8)).isTrue(); // back to the first published region
        assertThat(ranges.region(0)).isSameAs(second);
        assertThat(ranges.region(1)).isSameAs(first);
        assertThat(ranges.region(2)).isSameAs(first);
        assertThat(ranges.region(3)).isSameAs(second);
        assertThat(ranges.accept(first.address() + 4000, 200)).isFalse(); // past its end
        assertThat(ranges.refused()).isTrue();
        blocks.close();
    }

    @Test
    void aRangeOutsideTheWindowRefusesTheRequestAndStopsTheReadingUnlessAllMustBeRead() {
        RequestedRanges ranges = new RequestedRanges().reset(window, false);
        assertThat(ranges.accept(BASE + 4000, 200)).isFalse();
        assertThat(ranges.refused()).isTrue();
        assertThat(ranges.size()).isZero();

        RequestedRanges inline = new RequestedRanges().reset(window, true);
        assertThat(inline.accept(BASE, 16)).isTrue();
        assertThat(inline.accept(BASE - 1, 16)).isTrue(); // read on, so the connection stays in step
        assertThat(inline.accept(BASE + 16, 16)).isTrue();
        assertThat(inline.refused()).isTrue();
        assertThat(inline.total()).isEqualTo(48); // every range counted, refused or not
    }

    @Test
    void withoutAWindowEveryRangeIsOnlyCounted() {
        RequestedRanges ranges = new RequestedRanges().reset(null, true);
        assertThat(ranges.refused()).isTrue();
        assertThat(ranges.accept(BASE, 100)).isTrue();
        assertThat(ranges.accept(BASE, -5)).isTrue();
        assertThat(ranges.size()).isZero();
        assertThat(ranges.total()).isEqualTo(100); // a negative length adds nothing
    }

    @Test
    void theTotalStopsCountingPastTheInlineLimit() {
        RequestedRanges ranges = new RequestedRanges().reset(null, true);
        ranges.accept(BASE, Long.MAX_VALUE);
        ranges.accept(BASE, Long.MAX_VALUE); // would overflow if it went on counting
        assertThat(ranges.total()).isGreaterThan(Wire.INLINE_MAX_BYTES).isPositive();
    }

    @Test
    void storageGrowsForALargeRequestAndIsNotKeptForTheNext() {
        RequestedRanges ranges = new RequestedRanges().reset(window, false);
        int many = RequestedRanges.KEPT * 4 + 3;
        for (int i = 0; i < many; i++) {
            assertThat(ranges.accept(BASE + i, 1)).isTrue();
        }
        assertThat(ranges.size()).isEqualTo(many);
        for (int i = 0; i < many; i++) {
            assertThat(ranges.addresses()[i]).isEqualTo(BASE + i);
        }
        ranges.reset(window, false);
        assertThat(ranges.size()).isZero();
        assertThat(ranges.total()).isZero();
        assertThat(ranges.refused()).isFalse();
        assertThat(ranges.addresses()).hasSize(RequestedRanges.KEPT);
        assertThat(ranges.lengths()).hasSize(RequestedRanges.KEPT);
    }
}
