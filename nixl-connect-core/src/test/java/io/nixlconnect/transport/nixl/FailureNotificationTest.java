package io.nixlconnect.transport.nixl;

import io.nixlconnect.internal.FailureReports;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The NIXL failure report's format (issue 25): what a Java passive operation turns into ERRORED, and what Python
 * Dynamo's passive operation must be able to ignore — it decodes every notification as UTF-8 (a malformed one would
 * raise in its status check) and compares it with its own key.
 */
class FailureNotificationTest {

    private static final byte[] KEY = "0123456789abcdef0123456789abcdef".getBytes(StandardCharsets.US_ASCII);

    private static String strictUtf8(byte[] bytes) throws CharacterCodingException {
        return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(bytes)).toString();
    }

    @Test
    void theReportIsTheDocumentedTextAndReadsBackAsItsKeyAndCause() throws Exception {
        byte[] report = FailureNotification.encode(KEY, "ReadOperation of worker 'w' was cancelled");

        assertThat(strictUtf8(report)).isEqualTo(
                "nixl-connect:failed:v1:0123456789abcdef0123456789abcdef\nReadOperation of worker 'w' was cancelled");
        FailureNotification.Received received = FailureNotification.parse(report, "reader-1");
        assertThat(received.key()).isEqualTo(KEY);
        assertThat(received.cause()).isEqualTo("ReadOperation of worker 'w' was cancelled");
        assertThat(received.peer()).isEqualTo("reader-1");
        assertThat(new String(report, StandardCharsets.UTF_8)).as("never a key itself").isNotEqualTo(new String(KEY,
                StandardCharsets.US_ASCII));
    }

    @Test
    void aLongCauseIsCutAtACharacterBoundarySoTheReportStaysValidUtf8() throws Exception {
        // Every cut point through a two-, three- and four-byte character.
        for (String character : List.of("é", "€", "😀")) {
            for (int pad = 0; pad < 4; pad++) {
                String cause = "x".repeat(pad) + character.repeat(FailureReports.MAX_CAUSE_BYTES);
                byte[] report = FailureNotification.encode(KEY, cause);
                String text = strictUtf8(report); // throws on a cut character
                String carried = text.substring(text.indexOf('\n') + 1);
                assertThat(carried.getBytes(StandardCharsets.UTF_8).length)
                        .isLessThanOrEqualTo(FailureReports.MAX_CAUSE_BYTES)
                        .isGreaterThan(FailureReports.MAX_CAUSE_BYTES - 4);
                assertThat(cause).startsWith(carried);
            }
        }
    }

    @Test
    void aKeyTheFormatCannotCarryGetsNoReport() {
        assertThat(FailureNotification.encode(new byte[0], "cause")).isNull();
        assertThat(FailureNotification.encode("a\nb".getBytes(StandardCharsets.US_ASCII), "cause")).isNull();
        assertThat(FailureNotification.encode(new byte[FailureNotification.MAX_BYTES], "cause")).isNull();
    }

    @Test
    void ordinaryNotificationsAreNotReportsAndMalformedReportsAreDropped() {
        assertThat(FailureNotification.isReport(KEY)).isFalse();
        assertThat(FailureNotification.isReport("nixl-connect:failed:v1".getBytes(StandardCharsets.US_ASCII))).isFalse();
        List<byte[]> malformed = new ArrayList<>();
        malformed.add("nixl-connect:failed:v1:".getBytes(StandardCharsets.US_ASCII)); // no key, no line
        malformed.add("nixl-connect:failed:v1:\ncause".getBytes(StandardCharsets.US_ASCII)); // empty key
        malformed.add("nixl-connect:failed:v1:key-without-line".getBytes(StandardCharsets.US_ASCII));
        byte[] huge = new byte[FailureNotification.MAX_BYTES + 1];
        System.arraycopy(FailureNotification.PREFIX, 0, huge, 0, FailureNotification.PREFIX.length);
        huge[FailureNotification.PREFIX.length + 1] = '\n';
        malformed.add(huge);
        for (byte[] bytes : malformed) {
            assertThat(FailureNotification.isReport(bytes)).isTrue();
            assertThat(FailureNotification.parse(bytes, "peer")).isNull();
        }
    }

    @Test
    void aPeersControlCharactersAndBadBytesNeverReachAMessage() {
        byte[] report = FailureNotification.encode(KEY, "line one\nFORGED\r\u001b[31m");
        byte[] withBadByte = java.util.Arrays.copyOf(report, report.length + 1);
        withBadByte[report.length] = (byte) 0xFF;

        FailureNotification.Received received = FailureNotification.parse(withBadByte, "peer\nname");

        assertThat(received.cause()).isEqualTo("line one?FORGED??[31m\uFFFD");
        assertThat(received.peer()).isEqualTo("peer?name");
    }
}
