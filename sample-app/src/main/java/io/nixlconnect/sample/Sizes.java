package io.nixlconnect.sample;

/** Byte counts for people: {@code 256 MiB}, {@code 1.5 GiB}, {@code 512 B}. */
final class Sizes {

    private static final String[] UNITS = {"B", "KiB", "MiB", "GiB", "TiB"};

    private Sizes() {
    }

    static String format(long bytes) {
        double value = bytes;
        int unit = 0;
        while (value >= 1024 && unit < UNITS.length - 1) {
            value /= 1024;
            unit++;
        }
        return value == Math.rint(value) ? String.format("%d %s", (long) value, UNITS[unit])
                : String.format("%.1f %s", value, UNITS[unit]);
    }
}
