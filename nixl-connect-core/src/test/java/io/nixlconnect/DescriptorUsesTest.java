package io.nixlconnect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

/** An operation's descriptors marked in use and unmarked: block lists of slices, mixed lists, refusals, races. */
class DescriptorUsesTest {

    private static List<Descriptor> blocks(Descriptor pool, int count, int size) {
        List<Descriptor> blocks = new ArrayList<>();
        for (int i = count - 1; i >= 0; i--) { // out of address order, as a block list is
            blocks.add(pool.slice((long) i * size, size));
        }
        return blocks;
    }

    @Test
    void aBlockListKeepsItsBufferAndEachSliceFromClosingUntilReleased() {
        try (Descriptor pool = Descriptor.allocate(64 * 16)) {
            List<Descriptor> blocks = blocks(pool, 64, 16);
            DescriptorUses.acquire(blocks);
            assertThatThrownBy(pool::close).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("in use by 64 live operation(s)");
            for (Descriptor block : blocks) {
                assertThatThrownBy(block::close).isInstanceOf(IllegalStateException.class).hasMessageContaining("in use");
            }
            DescriptorUses.acquire(blocks.subList(0, 2)); // a second operation over two of them
            DescriptorUses.release(blocks, blocks.size());
            assertThatThrownBy(pool::close).hasMessageContaining("in use by 2 live operation(s)");
            assertThatThrownBy(blocks.get(1)::close).hasMessageContaining("in use by 1 live operation(s)");
            DescriptorUses.release(blocks.subList(0, 2), 2);
            blocks.forEach(Descriptor::close);
        }
    }

    @Test
    void aMixedListMarksEachOriginalOncePerRun() {
        Descriptor first = Descriptor.allocate(256);
        Descriptor second = Descriptor.allocate(256);
        Descriptor whole = Descriptor.allocate(8);
        List<Descriptor> list = List.of(first.slice(0, 8), first.slice(64, 8), whole, second.slice(8, 8),
                first.slice(128, 8), whole, second);
        DescriptorUses.acquire(list);
        assertThatThrownBy(first::close).hasMessageContaining("in use by 3 live operation(s)");
        assertThatThrownBy(second::close).hasMessageContaining("in use by 2 live operation(s)");
        assertThatThrownBy(whole::close).hasMessageContaining("in use by 2 live operation(s)");
        DescriptorUses.release(list, list.size());
        first.close();
        second.close();
        whole.close();
    }

    @Test
    void aClosedSliceOrBufferRefusesTheWholeListAndLeavesNothingMarked() {
        Descriptor pool = Descriptor.allocate(64 * 16);
        Descriptor other = Descriptor.allocate(16);
        List<Descriptor> blocks = new ArrayList<>(blocks(pool, 64, 16));
        blocks.add(0, other);
        blocks.get(40).close();
        assertThatThrownBy(() -> DescriptorUses.acquire(blocks)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("is closed");
        other.close(); // unmarked again, as every block before the closed one and the pool
        blocks.get(39).close();
        blocks.get(41).close();
        Descriptor spare = pool.slice(0, 16);
        pool.close();
        assertThatThrownBy(() -> DescriptorUses.acquire(List.of(spare))).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("is closed");
    }

    /** A slice closed while an operation marks it: either the close fails (in use) or the marking does (closed). */
    @Test
    void closingASliceRacesItsMarkingWithOneWinner() throws Exception {
        try (Descriptor pool = Descriptor.allocate(4096)) {
            for (int round = 0; round < 2000; round++) {
                Descriptor slice = pool.slice(16, 16);
                List<Descriptor> list = List.of(slice);
                CyclicBarrier start = new CyclicBarrier(2);
                AtomicBoolean marked = new AtomicBoolean();
                Thread marker = new Thread(() -> {
                    await(start);
                    try {
                        DescriptorUses.acquire(list);
                        marked.set(true);
                    } catch (IllegalStateException closed) {
                        marked.set(false);
                    }
                });
                marker.start();
                await(start);
                boolean closed;
                try {
                    slice.close();
                    closed = true;
                } catch (IllegalStateException inUse) {
                    closed = false;
                }
                marker.join();
                assertThat(closed).as("round %d: exactly one of close and acquire succeeds", round)
                        .isNotEqualTo(marked.get());
                if (marked.get()) {
                    DescriptorUses.release(list, 1);
                    slice.close();
                }
            }
        }
    }

    private static void await(CyclicBarrier barrier) {
        try {
            barrier.await();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
