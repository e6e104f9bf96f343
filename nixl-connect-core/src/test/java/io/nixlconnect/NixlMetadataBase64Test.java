package io.nixlconnect;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Base64;
import java.util.HexFormat;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * The envelope's base64 is decoded in place, without copies; it must read exactly what the JDK's decoder reads and
 * refuse what it refuses (padded, unpadded, misplaced padding, foreign characters, wrong lengths), and carry the
 * same zlib stream on to the same inflate as the legacy hex form.
 */
class NixlMetadataBase64Test {

    /** The codec's outcome: the agent metadata, or the refusal's message. */
    private static String outcome(String encoded) {
        try {
            return HexFormat.of().formatHex(NixlMetadataCodec.decode(encoded, 1 << 20));
        } catch (InvalidMetadataException e) {
            return "refused: " + e.getMessage();
        }
    }

    /** What the JDK decoder makes of the base64, then the hex form's path for the same bytes. */
    private static String expected(String base64) {
        byte[] zlib;
        try {
            zlib = Base64.getDecoder().decode(base64);
        } catch (IllegalArgumentException e) {
            return "refused: " + new InvalidMetadataException("nixl_metadata",
                    "is not valid base64 after the 'b64:' prefix: " + e.getMessage()).getMessage();
        }
        if (zlib.length == 0) {
            return "refused: " + new InvalidMetadataException("nixl_metadata", "holds no data").getMessage();
        }
        return outcome(HexFormat.of().formatHex(zlib));
    }

    @Test
    void decodesAndRefusesAsTheJdkDoes() {
        SplittableRandom random = new SplittableRandom(64);
        String alphabet = "ABCxyz0189+/=-_ \n\u00e9";
        int accepted = 0;
        for (int round = 0; round < 20_000; round++) {
            byte[] agent = new byte[1 + random.nextInt(300)];
            for (int i = 0; i < agent.length; i++) {
                agent[i] = (byte) (random.nextInt(4) == 0 ? random.nextInt(256) : 'a' + i % 7);
            }
            StringBuilder text = new StringBuilder(NixlMetadataCodec.encode(agent).substring(4));
            switch (random.nextInt(4)) {
                case 0 -> { } // as written
                case 1 -> { // unpadded, as some encoders write it
                    while (text.length() > 0 && text.charAt(text.length() - 1) == '=') {
                        text.setLength(text.length() - 1);
                    }
                }
                default -> {
                    for (int edits = 1 + random.nextInt(2); edits > 0 && text.length() > 0; edits--) {
                        int at = random.nextInt(text.length());
                        switch (random.nextInt(3)) {
                            case 0 -> text.deleteCharAt(at);
                            case 1 -> text.insert(at, alphabet.charAt(random.nextInt(alphabet.length())));
                            default -> text.setCharAt(at, alphabet.charAt(random.nextInt(alphabet.length())));
                        }
                    }
                }
            }
            String base64 = text.toString();
            String expected = expected(base64);
            assertThat(outcome("b64:" + base64)).as(base64).isEqualTo(expected);
            if (!expected.startsWith("refused")) {
                accepted++;
            }
        }
        assertThat(accepted).isGreaterThan(5_000);
    }

    @Test
    void envelopesLargerThanThePooledBufferDecode() {
        byte[] agent = new byte[200_000];
        new SplittableRandom(3).nextBytes(agent); // incompressible: about 200 KB of zlib, 267 KB of base64
        String encoded = NixlMetadataCodec.encode(agent);
        assertThat(encoded.length()).isGreaterThan(64 * 1024);
        assertThat(NixlMetadataCodec.decode(encoded, 1 << 20)).isEqualTo(agent);
        byte[] small = "agent".getBytes();
        assertThat(NixlMetadataCodec.decode(NixlMetadataCodec.encode(small), 1 << 20)).isEqualTo(small);
    }
}
