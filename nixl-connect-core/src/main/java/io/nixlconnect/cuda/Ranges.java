package io.nixlconnect.cuda;

/** Bounds checks shared by the buffers and the raw-address copies. */
final class Ranges {

    private Ranges() {
    }

    static void checkByteCount(long bytes) {
        if (bytes < 0) {
            throw new IllegalArgumentException("byte count must be >= 0, was " + bytes);
        }
    }

    static void checkAddress(String what, long address) {
        if (address == 0) {
            throw new IllegalArgumentException(what + " address must not be null (0)");
        }
    }

    /** Checks that {@code [offset, offset + bytes)} lies inside a buffer of {@code size} bytes. */
    static void checkWithin(long size, long offset, long bytes, String buffer) {
        checkByteCount(bytes);
        if (offset < 0 || offset > size || bytes > size - offset) {
            throw new IndexOutOfBoundsException("range [" + offset + ", " + offset + " + " + bytes
                    + ") lies outside " + buffer + " of " + size + " bytes");
        }
    }
}
