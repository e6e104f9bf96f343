package io.nixlconnect.sample;

import static org.assertj.core.api.Assertions.assertThat;

import io.nixlconnect.Descriptor;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class TransferResultTests {

    @Test
    void summaryShowsSizeChecksumTimeAndThroughput() {
        TransferResult ok = new TransferResult("READ", 256L << 20, Duration.ofMillis(200), "0000abcd", "0000abcd", null);
        assertThat(ok.summary()).isEqualTo("READ   256 MiB  checksum OK  0.20 s  1.34 GB/s");
        TransferResult bad = new TransferResult("WRITE", 1536L << 20, Duration.ofSeconds(1), "00000001", "00000002", null);
        assertThat(bad.ok()).isFalse();
        assertThat(bad.summary()).startsWith("WRITE  1.5 GiB  checksum MISMATCH (expected 00000001, got 00000002)");
        assertThat(TransferResult.failed("READ", 10, new IllegalStateException("boom")).summary())
                .isEqualTo("READ   10 B  FAILED: boom");
    }

    @Test
    void hostTensorsAreDeterministicPerSeedIncludingOddSizes() {
        HostTensorMemory memory = new HostTensorMemory();
        try (Descriptor a = memory.allocate(1_000_003); Descriptor b = memory.allocate(1_000_003);
                Descriptor c = memory.allocate(1_000_003)) {
            memory.fill(a, 1);
            memory.fill(b, 1);
            memory.fill(c, 2);
            assertThat(memory.crc32c(a)).isEqualTo(memory.crc32c(b)).isNotEqualTo(memory.crc32c(c));
            byte[] bytes = a.toByteArray();
            assertThat(bytes[bytes.length - 1]).isEqualTo((byte) (HostTensorMemory.value(1, 1_000_003 / 8) >>> 16));
            assertThat(bytes[8]).isEqualTo((byte) HostTensorMemory.value(1, 1));
        }
    }
}
