package io.nixlconnect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import com.sun.management.ThreadMXBean;
import java.io.ByteArrayOutputStream;
import java.lang.management.ManagementFactory;
import java.util.Arrays;
import java.util.Base64;
import java.util.HexFormat;
import java.util.List;
import java.util.zip.Deflater;
import java.util.zip.GZIPOutputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The {@code nixl_metadata} envelope: {@code b64:} + base64(zlib level 6), legacy hex, and the inflation bound. */
class NixlMetadataCodecTest {

    private static final int LIMIT = RdmaMetadata.MAX_NIXL_METADATA_BYTES;
    private static final String FIELD = "nixl_metadata";

    static byte[] deflate(byte[] data, int level, boolean nowrap) {
        Deflater deflater = new Deflater(level, nowrap);
        try {
            deflater.setInput(data);
            deflater.finish();
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            byte[] chunk = new byte[65536];
            while (!deflater.finished()) {
                out.write(chunk, 0, deflater.deflate(chunk));
            }
            return out.toByteArray();
        } finally {
            deflater.end();
        }
    }

    static byte[] zlib(byte[] data) {
        return deflate(data, 6, false);
    }

    static String b64(byte[] compressed) {
        return "b64:" + Base64.getEncoder().encodeToString(compressed);
    }

    private static InvalidMetadataException refused(String encoded, int maxBytes) {
        InvalidMetadataException e = catchThrowableOfType(InvalidMetadataException.class,
                () -> NixlMetadataCodec.decode(encoded, maxBytes));
        assertThat(e).as("refused: %s", encoded.length() > 80 ? encoded.substring(0, 80) + "…" : encoded).isNotNull();
        assertThat(e.field()).isEqualTo(FIELD);
        return e;
    }

    private static InvalidMetadataException refused(String encoded) {
        return refused(encoded, LIMIT);
    }

    // ---- encoding ----

    @Test
    void encodesAsPythonDoes() {
        byte[] data = "NIXLAGENT:hello".getBytes();
        String encoded = NixlMetadataCodec.encode(data);
        assertThat(encoded).startsWith("b64:");
        byte[] compressed = Base64.getDecoder().decode(encoded.substring(4));
        assertThat(compressed[0]).as("zlib CMF: deflate, 32K window").isEqualTo((byte) 0x78);
        assertThat(compressed[1]).as("zlib FLG for level 6 (default)").isEqualTo((byte) 0x9c);
        assertThat(compressed).isEqualTo(zlib(data));
        assertThat(encoded.substring(4)).matches("[A-Za-z0-9+/]+={0,2}");
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 2, 3, 100, 8191, 8192, 8193, 65536, 1 << 20})
    void roundTripsAnySize(int size) {
        byte[] data = TestData.random(size);
        assertThat(NixlMetadataCodec.decode(NixlMetadataCodec.encode(data), LIMIT)).isEqualTo(data);
    }

    @Test
    void roundTripsHighlyCompressibleData() {
        byte[] data = new byte[3 << 20];
        assertThat(NixlMetadataCodec.decode(NixlMetadataCodec.encode(data), LIMIT)).isEqualTo(data);
    }

    @Test
    void refusesToEncodeNothing() {
        assertThatThrownBy(() -> NixlMetadataCodec.encode(null)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> NixlMetadataCodec.encode(new byte[0])).isInstanceOf(IllegalArgumentException.class);
    }

    // ---- legacy hex ----

    @Test
    void decodesLegacyHex() {
        byte[] data = "NIXLAGENT:legacy".getBytes();
        String hex = HexFormat.of().formatHex(zlib(data));
        assertThat(NixlMetadataCodec.decode(hex, LIMIT)).isEqualTo(data);
        // bytes.fromhex accepts upper case too
        assertThat(NixlMetadataCodec.decode(hex.toUpperCase(), LIMIT)).isEqualTo(data);
    }

    @Test
    void hexWithOddLengthIsRefused() {
        String hex = HexFormat.of().formatHex(zlib("x".getBytes()));
        assertThat(refused(hex.substring(1)).getMessage()).contains("odd number of hex digits");
        assertThat(refused("7").getMessage()).contains("odd");
    }

    @ParameterizedTest
    @ValueSource(strings = {"zz", "789g", "78 9c", "0x789c", "78-9c", "789c\n", "\u0667\u0668", "\uff17\uff18\uff19\uff43"})
    void hexWithBadCharactersIsRefused(String hex) {
        assertThat(refused(hex).getMessage()).containsAnyOf("bad character", "odd number");
    }

    @Test
    void nonAsciiDigitsAreNotHex() {
        // Character.digit accepts Arabic-Indic and full-width digits; Python's bytes.fromhex does not
        String ascii = HexFormat.of().formatHex(zlib("NIXLAGENT".getBytes()));
        String arabic = ascii.replace('7', '\u0667');
        assertThat(arabic).isNotEqualTo(ascii);
        assertThat(refused(arabic).getMessage()).contains("bad character");
    }

    // ---- base64 ----

    @ParameterizedTest
    @ValueSource(strings = {"b64:@@@not*base64@@@", "b64:eJzz 84zw", "b64:eJ-_", "b64:====", "b64:e===", "b64:\u00e9J"})
    void badBase64IsRefused(String encoded) {
        assertThat(refused(encoded).getMessage()).containsAnyOf("base64", "zlib", "truncated", "no data");
    }

    @Test
    void prefixAloneHoldsNoData() {
        assertThat(refused("b64:").getMessage()).contains("no data");
    }

    @ParameterizedTest
    @ValueSource(strings = {"", " "})
    void emptyIsRefused(String encoded) {
        assertThat(refused(encoded).getMessage()).containsAnyOf("must not be empty", "odd", "bad character");
    }

    @Test
    void emptyMessageSaysEmpty() {
        assertThat(refused("").getMessage()).contains("must not be empty");
    }

    @Test
    void validBase64OfNonZlibIsRefused() {
        assertThat(refused(b64("plain bytes, not zlib".getBytes())).getMessage()).contains("not zlib-compressed");
        assertThat(refused(HexFormat.of().formatHex("plain bytes, not zlib".getBytes())).getMessage())
                .contains("not zlib-compressed");
    }

    @Test
    void rawDeflateAndGzipAreNotZlib() throws Exception {
        byte[] data = "NIXLAGENT:raw".getBytes();
        refused(b64(deflate(data, 6, true)));
        ByteArrayOutputStream gz = new ByteArrayOutputStream();
        try (GZIPOutputStream out = new GZIPOutputStream(gz)) {
            out.write(data);
        }
        assertThat(refused(b64(gz.toByteArray())).getMessage()).contains("not zlib-compressed");
    }

    @Test
    void truncatedZlibStreamIsRefused() {
        byte[] compressed = zlib(TestData.random(4096));
        for (int cut : new int[] {2, 10, compressed.length / 2, compressed.length - 4, compressed.length - 1}) {
            InvalidMetadataException e = refused(b64(Arrays.copyOf(compressed, cut)));
            assertThat(e.getMessage()).as("cut at %d", cut).containsAnyOf("truncated", "not zlib");
        }
        assertThat(refused(b64(Arrays.copyOf(compressed, compressed.length - 1))).getMessage()).contains("truncated");
        assertThat(refused(HexFormat.of().formatHex(Arrays.copyOf(compressed, compressed.length / 2))).getMessage())
                .contains("truncated");
    }

    @Test
    void zlibHeaderAloneIsTruncated() {
        assertThat(refused(b64(new byte[] {0x78, (byte) 0x9c})).getMessage()).contains("truncated");
    }

    @Test
    void streamThatNeedsAPresetDictionaryIsRefused() {
        Deflater deflater = new Deflater(6);
        deflater.setDictionary("dictionary".getBytes());
        deflater.setInput("NIXLAGENT with dictionary".getBytes());
        deflater.finish();
        byte[] buffer = new byte[256];
        int n = deflater.deflate(buffer);
        deflater.end();
        refused(b64(Arrays.copyOf(buffer, n)));
    }

    @Test
    void streamInflatingToNothingIsRefused() {
        refused(b64(zlib(new byte[0])));
    }

    // ---- the bound ----

    @Test
    void boundIsInclusive() {
        byte[] data = TestData.random(1000);
        assertThat(NixlMetadataCodec.decode(NixlMetadataCodec.encode(data), 1000)).isEqualTo(data);
        InvalidMetadataException e = refused(NixlMetadataCodec.encode(data), 999);
        assertThat(e.getMessage()).contains("more than 999 bytes");
    }

    @Test
    void anEnvelopeDecodedBeforeStillHonoursASmallerBound() {
        byte[] data = TestData.random(1000);
        String encoded = NixlMetadataCodec.encode(data);
        NixlMetadataCodec.validate(encoded, 1000); // remembered from here on
        assertThat(NixlMetadataCodec.decode(encoded, 1000)).isEqualTo(data);
        assertThat(refused(encoded, 999).getMessage()).contains("more than 999 bytes");
        assertThatThrownBy(() -> NixlMetadataCodec.validate(encoded, 999)).isInstanceOf(InvalidMetadataException.class)
                .hasMessageContaining("more than 999 bytes");
    }

    @Test
    void decodingAnEnvelopeAgainReturnsAFreshCopy() {
        byte[] data = TestData.random(300);
        String encoded = NixlMetadataCodec.encode(data);
        byte[] first = NixlMetadataCodec.decode(encoded, LIMIT);
        Arrays.fill(first, (byte) 0);
        byte[] second = NixlMetadataCodec.decode(new String(encoded.toCharArray()), LIMIT); // equal text, other object
        assertThat(second).isEqualTo(data).isNotSameAs(first);
    }

    @Test
    void boundAppliesToHexToo() {
        String hex = HexFormat.of().formatHex(zlib(new byte[100_000]));
        assertThat(refused(hex, 50_000).getMessage()).contains("more than 50000 bytes");
    }

    @Test
    @Timeout(30)
    void zlibBombIsRefusedQuicklyWithoutHugeAllocation() {
        byte[] bomb = deflate(new byte[80 << 20], 9, false); // 80 MiB of zeros
        assertThat(bomb.length).as("the bomb is small").isLessThan(100 * 1024);
        String encoded = b64(bomb);

        List<SerializedDescriptor> descriptors = List.of(new SerializedDescriptor("cpu", 4096, 16));
        ThreadMXBean threads = (ThreadMXBean) ManagementFactory.getThreadMXBean();
        long thread = Thread.currentThread().getId();
        long allocatedBefore = threads.getThreadAllocatedBytes(thread);
        long start = System.nanoTime();
        InvalidMetadataException e = catchThrowableOfType(InvalidMetadataException.class,
                () -> new RdmaMetadata(descriptors, encoded, "k", OperationKind.READ));
        long elapsedMs = (System.nanoTime() - start) / 1_000_000;
        long allocated = threads.getThreadAllocatedBytes(thread) - allocatedBefore;
        System.out.printf("zlib bomb: %d compressed bytes refused in %d ms, %d MiB allocated%n", bomb.length, elapsedMs,
                allocated >> 20);

        assertThat(e).isNotNull();
        assertThat(e.field()).isEqualTo(FIELD);
        assertThat(e.getMessage()).contains("more than " + LIMIT + " bytes");
        assertThat(elapsedMs).as("refused quickly").isLessThan(10_000);
        if (threads.isThreadAllocatedMemorySupported() && threads.isThreadAllocatedMemoryEnabled()) {
            assertThat(allocated).as("bytes allocated while refusing the bomb").isLessThan(512L << 20);
        }
    }

    @Test
    @Timeout(60)
    void biggerBombIsStillStoppedAtTheLimit() {
        // 256 MiB of zeros, deflated in pieces so the test itself stays small (4x the limit)
        Deflater deflater = new Deflater(9);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        byte[] zeros = new byte[1 << 20];
        byte[] chunk = new byte[65536];
        for (int i = 0; i < 256; i++) {
            deflater.setInput(zeros);
            while (!deflater.needsInput()) {
                out.write(chunk, 0, deflater.deflate(chunk));
            }
        }
        deflater.finish();
        while (!deflater.finished()) {
            out.write(chunk, 0, deflater.deflate(chunk));
        }
        deflater.end();
        long start = System.nanoTime();
        InvalidMetadataException e = refused(b64(out.toByteArray()));
        assertThat(e.getMessage()).contains("zlib bomb");
        assertThat((System.nanoTime() - start) / 1_000_000).isLessThan(10_000);
    }

    @Test
    void justUnderTheLimitIsAccepted() {
        byte[] data = new byte[LIMIT];
        data[LIMIT - 1] = 7;
        byte[] decoded = NixlMetadataCodec.decode(b64(deflate(data, 9, false)), LIMIT);
        assertThat(decoded.length).isEqualTo(LIMIT);
        assertThat(decoded[LIMIT - 1]).isEqualTo((byte) 7);
    }

    // ---- the prefix is exact (Python's lstrip("b64:") strips a character set) ----

    /** What Python's {@code s.lstrip("b64:")} does. */
    private static String pythonLstrip(String s) {
        int i = 0;
        while (i < s.length() && "b64:".indexOf(s.charAt(i)) >= 0) {
            i++;
        }
        return s.substring(i);
    }

    @Test
    void base64OfAnyZlibHeaderNeverStartsWithAPrefixCharacter() {
        // why lstrip is latent for real senders: the first base64 character encodes the CMF byte's top 6 bits,
        // and no valid CMF (CM = 8, CINFO 0..7) maps to 'b', '6', '4' (or ':', not base64 at all)
        for (int cinfo = 0; cinfo <= 7; cinfo++) {
            int cmf = cinfo << 4 | 8;
            for (int flevel = 0; flevel <= 3; flevel++) {
                int flg = flevel << 6;
                flg += 31 - ((cmf << 8 | flg) % 31);
                flg = (cmf << 8 | flg) % 31 == 0 ? flg : flg - 31;
                String head = Base64.getEncoder().encodeToString(new byte[] {(byte) cmf, (byte) flg});
                assertThat("b64:").as("CMF %02x", cmf).doesNotContain(head.substring(0, 1));
            }
        }
    }

    @Test
    void prefixIsStrippedExactlyOnce() {
        byte[] data = "NIXLAGENT:prefix".getBytes();
        String payload = NixlMetadataCodec.encode(data).substring(4);
        // a doubled prefix: lstrip would strip all eight characters and accept it; the exact prefix leaves
        // "b64:…" behind, which is not base64, so the document is refused
        String doubled = "b64:b64:" + payload;
        assertThat(pythonLstrip(doubled)).isEqualTo(payload);
        assertThat(refused(doubled).getMessage()).contains("base64");
        // stray prefix characters before the payload: lstrip would silently drop them
        for (String junk : new String[] {"b", "6", "4", ":", "44", "b6", "::"}) {
            String corrupted = "b64:" + junk + payload;
            assertThat(pythonLstrip(corrupted)).isEqualTo(payload);
            refused(corrupted);
        }
    }

    @Test
    void payloadWhoseBase64StartsWithPrefixCharactersDecodesExactly() {
        // Not a valid zlib stream can start so (see above), so build the case at the base64 layer: bytes whose
        // base64 starts with "b64" and check the codec hands exactly those bytes (not lstrip's) to zlib,
        // by observing that the result is "not zlib" for the exact bytes rather than a base64 error for the
        // misaligned remainder.
        byte[] bytes = Base64.getDecoder().decode("b64AAAAA");
        String encoded = "b64:" + Base64.getEncoder().encodeToString(bytes);
        assertThat(encoded).isEqualTo("b64:b64AAAAA");
        assertThat(pythonLstrip(encoded)).isEqualTo("AAAAA"); // 5 chars: not even valid base64
        InvalidMetadataException e = refused(encoded);
        assertThat(e.getMessage()).as("the 6 exact bytes reached zlib").contains("not zlib-compressed");
    }

    @Test
    void prefixIsCaseSensitive() {
        String payload = NixlMetadataCodec.encode("NIXLAGENT".getBytes()).substring(4);
        refused("B64:" + payload);
        refused(" b64:" + payload);
    }
}
