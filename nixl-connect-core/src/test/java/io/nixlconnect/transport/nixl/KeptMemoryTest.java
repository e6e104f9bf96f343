package io.nixlconnect.transport.nixl;

import ch.qos.logback.classic.Level;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/** Memory kept for stalled peers until the agent is destroyed: what it holds, counts, warns about and frees. */
class KeptMemoryTest {

    private AgentLogCapture logs;

    @BeforeEach
    void captureLogs() {
        logs = new AgentLogCapture(Level.WARN);
    }

    @AfterEach
    void stopCapturing() {
        logs.close();
    }

    @Test
    void holdsMemoryUntilFreeAllThenFreesEachAndCountsFromZero() {
        KeptMemory kept = new KeptMemory("kept-test", 1 << 20);
        AtomicInteger freed = new AtomicInteger();
        kept.keep(freed::incrementAndGet, 4096, 100);
        kept.keep(freed::incrementAndGet, 0, 200);
        assertThat(freed).as("held while the agent lives").hasValue(0);
        assertThat(kept.details()).containsEntry("bytesKeptAfterDrainLimit", 4096L)
                .containsEntry("bytesKeptResident", 300L).containsEntry("memoryHeldUntilClose", 2)
                .containsEntry("maxKeptBytes", 1L << 20);

        kept.freeAll();
        assertThat(freed).hasValue(2);
        assertThat(kept.details()).containsEntry("bytesKeptAfterDrainLimit", 0L)
                .containsEntry("bytesKeptResident", 0L).containsEntry("memoryHeldUntilClose", 0);
        kept.freeAll();
        assertThat(freed).as("each memory freed once").hasValue(2);
    }

    @Test
    void aWindowsBytesCountWithoutMemoryToHold() {
        KeptMemory kept = new KeptMemory("kept-test", 1 << 20);
        kept.countWindow(4096);
        kept.countWindow(8192);
        assertThat(kept.details()).containsEntry("bytesKeptAfterDrainLimit", 12288L)
                .containsEntry("bytesKeptResident", 0L).containsEntry("memoryHeldUntilClose", 0);
    }

    @Test
    void aMemoryThatFailsToCloseIsLoggedAndTheOthersAreStillFreed() {
        KeptMemory kept = new KeptMemory("kept-test", 1 << 20);
        List<String> freed = new ArrayList<>();
        kept.keep(() -> {
            throw new IllegalStateException("cannot free");
        }, 0, 0);
        kept.keep(() -> freed.add("second"), 0, 0);
        kept.freeAll();
        assertThat(freed).containsExactly("second");
        assertThat(logs.of("kept-test")).anySatisfy(event -> {
            assertThat(event.getFormattedMessage()).contains("kept-test").contains("freeing memory kept");
            assertThat(event.getThrowableProxy().getMessage()).isEqualTo("cannot free");
        });
    }

    @Test
    void warnsOnceWhenTheResidentBytesCrossTheCapAndAgainAfterTheyWereFreed() {
        KeptMemory kept = new KeptMemory("kept-test", 100);
        kept.keep(() -> { }, 0, 60);
        assertThat(capWarnings()).as("under the cap").isZero();
        kept.keep(() -> { }, 0, 60);
        assertThat(capWarnings()).as("crossed").isEqualTo(1);
        kept.keep(() -> { }, 0, 10);
        assertThat(capWarnings()).as("still over: no second warning").isEqualTo(1);
        assertThat(logs.of("kept-test").get(0).getFormattedMessage()).contains("120 bytes")
                .contains("cap of 100");

        kept.freeAll();
        kept.keep(() -> { }, 0, 101);
        assertThat(capWarnings()).as("crossed again after being freed").isEqualTo(2);
    }

    private long capWarnings() {
        return logs.of("kept-test").stream().filter(event -> event.getLevel() == Level.WARN
                && event.getFormattedMessage().contains("NixlSettings.maxKeptBytes")).count();
    }
}
