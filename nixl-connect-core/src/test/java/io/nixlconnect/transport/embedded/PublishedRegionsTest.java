package io.nixlconnect.transport.embedded;

import static org.assertj.core.api.Assertions.assertThat;

import io.nixlconnect.transport.MemoryRegion;
import io.nixlconnect.transport.MemoryType;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** Which published region holds a requested range: by the request's order first, else by address. */
class PublishedRegionsTest {

    private static MemoryRegion region(long address, long length) {
        return new MemoryRegion(address, length, MemoryType.DRAM, 0);
    }

    /**
     * Moved from EmbeddedWindowTest (the window's lookup). The answer must be the linear scan's, overlapping, nested
     * and shared-start regions included, whatever the hint.
     */
    @Test
    void aRangeIsCoveredExactlyWhenSomeRegionHoldsIt() {
        Random random = new Random(23);
        List<MemoryRegion> regions = new ArrayList<>();
        for (int i = 0; i < 300; i++) {
            long start = 0x100000 + random.nextInt(1 << 16) * 16L;
            long length = i % 10 == 0 ? 1 << 14 : random.nextInt(512); // some long regions span many short ones
            regions.add(region(start, length));
            if (i % 25 == 0) {
                regions.add(region(start, random.nextInt(64)));
            }
        }
        PublishedRegions published = new PublishedRegions(regions);
        int covered = 0;
        for (int i = 0; i < 50_000; i++) {
            long address = 0x100000 - 1024 + random.nextInt((1 << 20) + 20_000);
            long length = i % 7 == 0 ? -1 - random.nextInt(4) : random.nextInt(i % 3 == 0 ? 1 << 15 : 600);
            int hint = random.nextInt(regions.size() + 2) - 1; // -1 .. size: any hint, even one past the end
            boolean expected = regions.stream().anyMatch(region -> region.contains(address, length));
            int found = published.indexCovering(address, length, hint);
            assertThat(found >= 0).as("range [%x, +%d) hint %d", address, length, hint).isEqualTo(expected);
            if (found >= 0) {
                assertThat(published.get(found).contains(address, length)).isTrue();
                covered++;
            }
        }
        assertThat(covered).isGreaterThan(1000); // the draw hits regions, not only gaps
        assertThat(published.indexCovering(Long.MIN_VALUE, 1, -1)).isEqualTo(-1);
        assertThat(published.indexCovering(Long.MAX_VALUE, 0, -1)).isEqualTo(-1);
    }

    /** A block list in publication order, whole or in pieces, is answered by the hint: nothing is sorted. */
    @Test
    void rangesInPublicationOrderAreFoundWithoutAnIndex() {
        List<MemoryRegion> blocks = new ArrayList<>();
        for (int i = 0; i < 64; i++) {
            blocks.add(region(0x100000 + (2L * i + 1) * 4096, 4096));
        }
        Collections.shuffle(blocks, new Random(7)); // scattered: their addresses are in no order
        PublishedRegions published = new PublishedRegions(blocks);
        int hint = -1;
        for (int i = 0; i < blocks.size(); i++) {
            MemoryRegion block = blocks.get(i);
            hint = published.indexCovering(block.address(), 1024, hint); // a block in two pieces, as a stripe cuts it
            assertThat(hint).isEqualTo(i);
            hint = published.indexCovering(block.address() + 1024, 3072, hint);
            assertThat(hint).isEqualTo(i);
        }
        assertThat(published.indexed()).isFalse();
        // Out of order: found all the same, through the index.
        assertThat(published.indexCovering(blocks.get(10).address(), 4096, 40)).isEqualTo(10);
        assertThat(published.indexed()).isTrue();
        // Between two blocks, and straddling one's end: in none.
        assertThat(published.indexCovering(blocks.get(3).address() - 4096, 4096, 2)).isEqualTo(-1);
        assertThat(published.indexCovering(blocks.get(3).address() + 4000, 200, 2)).isEqualTo(-1);
    }

    @Test
    void anEmptyPublicationCoversNothing() {
        PublishedRegions published = new PublishedRegions(List.of());
        assertThat(published.size()).isZero();
        assertThat(published.indexCovering(0x1000, 0, -1)).isEqualTo(-1);
        assertThat(published.indexCovering(0x1000, 0, 0)).isEqualTo(-1);
    }
}
