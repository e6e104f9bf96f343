package io.nixlconnect;

import java.util.SplittableRandom;

/** Fresh random bytes for byte-exact transfer checks. */
final class TestData {

    private static final SplittableRandom SEEDS = new SplittableRandom();

    private TestData() {
    }

    static byte[] random(int size) {
        byte[] bytes = new byte[size];
        SplittableRandom random = SEEDS.split();
        for (int i = 0; i < size; i += 8) {
            long value = random.nextLong();
            for (int j = 0; j < 8 && i + j < size; j++) {
                bytes[i + j] = (byte) (value >>> (8 * j));
            }
        }
        return bytes;
    }
}
