package io.nixlconnect.sample;

/** CRC32C values as the HTTP API shows them: 8 lowercase hex digits. */
final class Checksums {

    private Checksums() {
    }

    static String hex(long crc32c) {
        return String.format("%08x", crc32c);
    }
}
