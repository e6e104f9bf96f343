package io.nixlconnect.sample;

import java.net.ConnectException;
import java.time.Duration;

/**
 * One transfer of the demo: what moved, how long the one-sided transfer took (from begin to completion,
 * peer connection included), and whether the receiving side's CRC32C matched the sending side's.
 */
public record TransferResult(String kind, long bytes, Duration duration, String expectedCrc32c, String actualCrc32c,
        String error) {

    static TransferResult failed(String kind, long bytes, Throwable error) {
        String message = error.getMessage() == null ? error.getClass().getSimpleName() : error.getMessage();
        if (message.endsWith(": null")) { // Spring's I/O error message around a cause without one
            message = message.substring(0, message.length() - ": null".length());
        }
        for (Throwable cause = error.getCause(); cause != null && cause != cause.getCause(); cause = cause.getCause()) {
            if (cause instanceof ConnectException) {
                return new TransferResult(kind, bytes, null, null, null, message + " (connection refused)");
            }
        }
        return new TransferResult(kind, bytes, null, null, null, message);
    }

    /** Whether the transfer completed and the checksums match. */
    public boolean ok() {
        return error == null && expectedCrc32c != null && expectedCrc32c.equals(actualCrc32c);
    }

    /** Decimal gigabytes per second; 0 when it failed. */
    public double gigabytesPerSecond() {
        if (duration == null || duration.isZero()) {
            return 0;
        }
        return bytes / (duration.toNanos() / 1e9) / 1e9;
    }

    /** One line of the demo report, e.g. {@code READ   256 MiB  checksum OK  0.21 s  1.27 GB/s}. */
    public String summary() {
        String head = String.format("%-6s %s", kind, Sizes.format(bytes));
        if (error != null) {
            return head + "  FAILED: " + error;
        }
        String check = ok() ? "checksum OK" : "checksum MISMATCH (expected " + expectedCrc32c + ", got " + actualCrc32c + ")";
        return String.format("%s  %s  %.2f s  %.2f GB/s", head, check, duration.toNanos() / 1e9, gigabytesPerSecond());
    }
}
