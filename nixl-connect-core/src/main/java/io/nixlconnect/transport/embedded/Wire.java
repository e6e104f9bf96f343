package io.nixlconnect.transport.embedded;

import io.nixlconnect.internal.FailureReports;
import io.nixlconnect.internal.NativeMemory;
import io.nixlconnect.transport.MemoryType;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * The embedded transport's protocol, big-endian over one connection (plain TCP, or TLS) at a time. When a
 * shared secret is set, {@link PeerAuthentication} runs first.
 *
 * <pre>
 * request  := MAGIC:int type:byte agentLen:short credentialLen:short count:int agent:bytes credential:bytes
 *             (address:long length:long)*count
 * response := status:byte [messageLen:short message:bytes when status = ERROR]
 *
 * READ   request → response → (OK) the ranges' bytes in order      ; then the client sends NOTIFY
 * WRITE  request → response → (OK) client sends the ranges' bytes → response (after the notification)
 * NOTIFY request (count 0) → response (OK once delivered to a waiting window)
 * FAIL   request (count 0) reporterLen:short reporter causeLen:short cause → response (OK once the window that
 *        waits alone for this credential has ended ERRORED; ERROR, and the connection dropped, when none does)
 * WRITE_STRIPE  request → response → (OK) client sends the ranges' bytes → response (OK once they are in; no
 *        notification: one large WRITE striped over several connections sends its NOTIFY after every stripe's OK)
 *
 * Small transfers (at most INLINE_MAX_BYTES in at most INLINE_MAX_RANGES ranges), one round trip:
 * READ_INLINE  request → OK the ranges' bytes in order (the server then delivers the notification itself)
 *              | ERROR (refused as a READ would be; the connection stays in step)
 * WRITE_INLINE request, the ranges' bytes at once → response (OK after the bytes landed and the notification
 *              was delivered; ERROR as a WRITE is refused, and then the bytes were read and dropped, never written)
 *
 * Same host (cross-memory attach; the side that owns the destination memory copies, nobody writes into
 * another process):
 * IDENTIFY   request (count 0, any credential) → OK pid:long bootId:16 zero:24 (a hint only: it proves nothing)
 *            | DECLINED messageLen:short message (setting off) | ERROR
 * READ_GRANT request (credential, ranges as READ) challenge:32 → GRANT: OK pid:long proofAddress:long, the window
 *            stays pinned | DECLINED messageLen:short message (use READ) | ERROR (refused as a READ would be)
 *            → the client reads the proof (GrantProof) at proofAddress in pid and checks it, copies only if it holds,
 *            then sends DONE or ABORTED:byte → response (DONE: after the notification)
 *            The older READ_GRANT_UNBOUND (no challenge, no proof) is declined: such a reader streams.
 *            While granted, the server may send REVOKED (ERROR messageLen:short message) at any time: the window
 *            was closed. The client checks for it between chunks and after its copy, stops, sends ABORTED and
 *            closes the connection; its transfer fails. The server says nothing more on that connection.
 * </pre>
 *
 * The credential is the passive operation's notification key: a READ or WRITE is served only from the one
 * window opened with it, and a NOTIFY completes only that window. The fixed-size head comes first so the
 * server checks every length against its limits before it allocates anything, and it looks the window up
 * before it reads a single range; ranges are then read in bounded chunks and each is checked as it arrives.
 */
final class Wire {

    static final int MAGIC = 0x4E584332; // "NXC2": version 2, with per-window credentials
    /** The version 1 magic ("NXCN"), recognised only to tell an outdated peer what is wrong. */
    static final int MAGIC_V1 = 0x4E58434E;
    static final byte READ = 1;
    static final byte WRITE = 2;
    static final byte NOTIFY = 3;
    static final byte IDENTIFY = 4;
    /**
     * The grant of readers from before grant proofs, which copied from whatever pid the peer named: declined, so such a
     * reader streams instead.
     */
    static final byte READ_GRANT_UNBOUND = 5;
    /** A small READ in one round trip: the server sends OK and the bytes, then delivers the notification itself. */
    static final byte READ_INLINE = 6;
    /** A small WRITE in one round trip: the bytes follow the request at once; one answer, after the notification. */
    static final byte WRITE_INLINE = 7;
    /**
     * A WRITE of part of a transfer's ranges that delivers no notification (see {@link StripedTransfer}). Peers
     * from before it drop the connection on it without an answer, which tells the client to send one WRITE.
     */
    static final byte WRITE_STRIPE = 8;
    /**
     * The active side's transfer with this credential ended without notifying (failed, timed out, cancelled): the
     * head (count 0) is followed by {@code reporterLen:u16 reporter causeLen:u16 cause}, both UTF-8 and bounded
     * ({@link FailureReports}). The server ends the window it names ERRORED and answers OK, or answers ERROR when no
     * window waits for it (and drops the connection, the rest unread). Peers from before it drop the connection.
     */
    static final byte FAIL = 9;
    /**
     * A same-host copy grant proven by the owner from its own memory ({@link GrantProof}). Peers from before it drop the
     * connection on it without an answer: the reader then takes TCP for that peer.
     */
    static final byte READ_GRANT = 10;
    static final byte OK = 0;
    static final byte ERROR = 1;
    static final byte DECLINED = 2;
    /** After a grant: the client copied everything (deliver the notification) or gave up (deliver nothing). */
    static final byte COPY_DONE = 0;
    static final byte COPY_ABORTED = 1;

    static final int HEAD = 4 + 1 + 2 + 2 + 4;
    static final int MAX_AGENT_NAME = 1024;
    /** Longest credential (notification key) a window may have; keys are generated, 32 hex characters. */
    static final int MAX_CREDENTIAL = 1024;
    /** Shortest credential a window may be opened with: 128 bits written as hex. */
    static final int MIN_CREDENTIAL = 16;
    static final int MAX_RANGES = 1 << 20;
    /** Ranges read per chunk: the server holds at most this many unchecked ranges at once. */
    static final int RANGE_CHUNK = 4096;
    /**
     * Most bytes a transfer moves in one round trip (READ_INLINE, WRITE_INLINE). At this size the bytes cost less
     * than a round trip (loopback moves 64 KiB in ~10–20 µs, a round trip with its two thread wake-ups costs
     * 30–100 µs), so a same-host READ's direct copy, which needs a second round trip, does not pay off below it; and
     * a refused WRITE_INLINE's bytes, which the server must read and drop, stay bounded by it. It is also the size
     * up to which the waiting thread runs a transfer itself (ActiveOperation).
     */
    static final int INLINE_MAX_BYTES = 64 * 1024;
    /** Most ranges of an inline request: the server reads them all, whether it serves the request or refuses it. */
    static final int INLINE_MAX_RANGES = 1024;

    private Wire() {
    }

    private static final long[] NO_RANGES = new long[0];

    /**
     * A request's fixed-size head and names; the ranges follow on the link. A server connection reads every request
     * into the same object: the agent name is kept as long as it repeats, the credential array is refilled when its
     * length repeats. Its values are valid until the next {@link #readHead}.
     */
    static final class Head {
        private byte type;
        private int count;
        private String agent;
        private byte[] agentBytes = new byte[0];
        private byte[] credential = new byte[0];

        byte type() {
            return type;
        }

        String agent() {
            return agent;
        }

        /** Refilled by the next request on the connection: use it for this request only, never keep it. */
        byte[] credential() {
            return credential;
        }

        int count() {
            return count;
        }

        private void names(byte[] names, int nameLength, int credentialLength) {
            if (!Arrays.equals(agentBytes, 0, agentBytes.length, names, 0, nameLength)) {
                agentBytes = Arrays.copyOf(names, nameLength);
                agent = new String(agentBytes, StandardCharsets.UTF_8);
            }
            if (credential.length != credentialLength) {
                credential = new byte[credentialLength];
            }
            System.arraycopy(names, nameLength, credential, 0, credentialLength);
        }
    }

    static ByteBuffer encodeRequest(byte type, String agent, byte[] credential, long[] addresses, long[] lengths) {
        byte[] name = agent.getBytes(StandardCharsets.UTF_8);
        return encodeRequest(ByteBuffer.allocate(requestBytes(name, credential, addresses.length)), type, name,
                credential, addresses, lengths);
    }

    /** A request encoded in the link's scratch buffer (valid until its next use), ready to write. */
    static ByteBuffer encodeRequest(Link link, byte type, byte[] agent, byte[] credential, long[] addresses,
            long[] lengths) {
        return encodeRequest(link.scratch(requestBytes(agent, credential, addresses.length)), type, agent, credential,
                addresses, lengths);
    }

    /** Sends a request, encoded in the link's scratch buffer. {@code agent}: the peer agent's name in UTF-8. */
    static void writeRequest(Link link, byte type, byte[] agent, byte[] credential, long[] addresses, long[] lengths)
            throws IOException {
        link.writeFully(encodeRequest(link.scratch(requestBytes(agent, credential, addresses.length)), type, agent,
                credential, addresses, lengths));
    }

    /** Sends a request without ranges (NOTIFY, IDENTIFY). */
    static void writeRequest(Link link, byte type, byte[] agent, byte[] credential) throws IOException {
        writeRequest(link, type, agent, credential, NO_RANGES, NO_RANGES);
    }

    private static int requestBytes(byte[] agent, byte[] credential, int count) {
        return HEAD + agent.length + credential.length + 16 * count;
    }

    private static ByteBuffer encodeRequest(ByteBuffer buffer, byte type, byte[] name, byte[] credential,
            long[] addresses, long[] lengths) {
        int count = addresses.length;
        buffer.putInt(MAGIC).put(type).putShort((short) name.length).putShort((short) credential.length).putInt(count)
                .put(name).put(credential);
        for (int i = 0; i < count; i++) {
            buffer.putLong(addresses[i]).putLong(lengths[i]);
        }
        return buffer.flip();
    }

    /**
     * Reads one request's head, agent name and credential into {@code into}, checking each length before reading
     * what it announces (they fit the link's scratch buffer); false on a clean end of stream before the first byte.
     * The ranges are left on the link.
     */
    static boolean readHead(Link link, Head into) throws IOException {
        return readHead(link, into, () -> { });
    }

    /** {@link #readHead(Link, Head)}, telling {@code begun} once the head's first four bytes are in. */
    static boolean readHead(Link link, Head into, Runnable begun) throws IOException {
        ByteBuffer head = link.scratch(HEAD);
        if (!link.readFullyOrEof(head.limit(4))) {
            return false;
        }
        begun.run();
        int magic = head.getInt(0);
        if (magic != MAGIC) {
            if (magic == PeerAuthentication.HELLO_MAGIC || magic == PeerAuthentication.UNBOUND_HELLO_MAGIC) {
                throw new UnexpectedHelloException();
            }
            if (magic == MAGIC_V1) {
                throw new OutdatedPeerException();
            }
            throw new ProtocolException("not an embedded-transport request (bad magic)");
        }
        link.readFully(head.limit(HEAD));
        head.position(4);
        byte type = head.get();
        if (type < READ || type > READ_GRANT) {
            throw new ProtocolException("unknown request type " + type);
        }
        int nameLength = head.getShort() & 0xFFFF;
        if (nameLength == 0 || nameLength > MAX_AGENT_NAME) {
            throw new ProtocolException("agent name length " + nameLength + " out of range");
        }
        int credentialLength = head.getShort() & 0xFFFF;
        if (credentialLength == 0 || credentialLength > MAX_CREDENTIAL) {
            throw new ProtocolException("credential length " + credentialLength + " out of range");
        }
        int count = head.getInt();
        if (count < 0 || count > MAX_RANGES || ((type == NOTIFY || type == IDENTIFY || type == FAIL) && count != 0)
                || ((type == READ_INLINE || type == WRITE_INLINE) && count > INLINE_MAX_RANGES)) {
            throw new ProtocolException("range count " + count + " out of range");
        }
        ByteBuffer names = link.scratch(nameLength + credentialLength); // the head's fields are read: reuse its bytes
        link.readFully(names);
        into.names(names.array(), nameLength, credentialLength);
        into.type = type;
        into.count = count;
        return true;
    }

    /** Receives ranges from a request, in chunks of at most {@link #RANGE_CHUNK}; gets each one in turn. */
    interface RangeSink {
        /**
         * {@code length} may be negative: refuse it as a range outside the window.
         *
         * @return false to refuse the request: reading stops there, and the connection must be dropped
         */
        boolean accept(long address, long length);
    }

    /**
     * Reads {@code count} ranges, handing each to {@code sink}; false as soon as one is refused (the rest stay
     * unread, so the caller drops the connection). Memory held is one chunk, whatever the count.
     */
    static boolean readRanges(Link link, int count, RangeSink sink) throws IOException {
        ByteBuffer chunk = link.scratch(16 * Math.min(count, RANGE_CHUNK));
        for (int left = count; left > 0; ) {
            int n = Math.min(left, RANGE_CHUNK);
            chunk.clear().limit(16 * n);
            link.readFully(chunk);
            chunk.flip();
            for (int i = 0; i < n; i++) {
                long address = chunk.getLong();
                long length = chunk.getLong();
                // A negative length is the sink's to refuse like any range outside the window: dropping the
                // connection here instead would answer differently for a live credential than for a dead one.
                if (!sink.accept(address, length)) {
                    return false;
                }
            }
            left -= n;
        }
        return true;
    }

    static void writeOk(Link link) throws IOException {
        writeFully(link, link.scratch(1).put(OK).flip());
    }

    static void writeError(Link link, String message) throws IOException {
        byte[] text = message.getBytes(StandardCharsets.UTF_8);
        int length = Math.min(text.length, 4096);
        ByteBuffer buffer = link.scratch(3 + length);
        buffer.put(ERROR).putShort((short) length).put(text, 0, length).flip();
        writeFully(link, buffer);
    }

    /** Reads a response; returns null for OK, the peer's message for ERROR. */
    static String readResponse(Link link) throws IOException {
        byte status = readExactly(link, 1).get();
        if (status == OK) {
            return null;
        }
        if (status != ERROR) {
            throw new ProtocolException("bad response status " + status);
        }
        int length = readExactly(link, 2).getShort() & 0xFFFF;
        byte[] text = new byte[length];
        readExactly(link, length).get(text);
        return new String(text, StandardCharsets.UTF_8);
    }

    /** Answers an IDENTIFY with this process's identity. */
    static void writeHello(Link channel, SameHostIdentity identity) throws IOException {
        ByteBuffer buffer = channel.scratch(1 + SameHostIdentity.ENCODED_BYTES);
        buffer.put(OK);
        identity.encode(buffer);
        writeFully(channel, buffer.flip());
    }

    /**
     * Reads an IDENTIFY's answer: the peer's identity, or null when it declined (why goes to {@code declined}).
     *
     * @throws IOException for an ERROR answer (e.g. the peer requires authentication: it drops the connection)
     */
    static SameHostIdentity readHello(Link channel, StringBuilder declined) throws IOException {
        byte status = readExactly(channel, 1).get();
        if (status == OK) {
            return SameHostIdentity.decode(readExactly(channel, SameHostIdentity.ENCODED_BYTES));
        }
        if (status != ERROR && status != DECLINED) {
            throw new ProtocolException("bad response status " + status);
        }
        int length = readExactly(channel, 2).getShort() & 0xFFFF;
        byte[] text = new byte[length];
        readExactly(channel, length).get(text);
        String message = new String(text, StandardCharsets.UTF_8);
        if (status == ERROR) {
            throw new RefusedException("the peer refused IDENTIFY: " + message);
        }
        declined.append(message);
        return null;
    }

    /** Sends a READ_GRANT: the request, then the reader's fresh challenge, in one write. */
    static void writeGrantRequest(Link link, byte[] agent, byte[] credential, long[] addresses, long[] lengths,
            byte[] challenge) throws IOException {
        link.writeFully(new ByteBuffer[] {encodeRequest(link, READ_GRANT, agent, credential, addresses, lengths),
            ByteBuffer.wrap(challenge)});
    }

    /** Reads the challenge that follows a READ_GRANT's ranges. */
    static byte[] readChallenge(Link link) throws IOException {
        byte[] challenge = new byte[GrantProof.CHALLENGE_BYTES];
        link.readFully(ByteBuffer.wrap(challenge));
        return challenge;
    }

    /** Grants a peer the ranges of its READ_GRANT: they stay pinned until it reports; the proof lies at {@code proofAddress}. */
    static void writeGrant(Link channel, long pid, long proofAddress) throws IOException {
        writeFully(channel, channel.scratch(17).put(OK).putLong(pid).putLong(proofAddress).flip());
    }

    /** Declines a READ_GRANT whose ranges can only go over the socket (GPU memory, setting off). */
    static void writeDeclined(Link channel, String message) throws IOException {
        byte[] text = message.getBytes(StandardCharsets.UTF_8);
        int length = Math.min(text.length, 4096);
        writeFully(channel, channel.scratch(3 + length).put(DECLINED).putShort((short) length).put(text, 0, length)
                .flip());
    }

    /** A READ_GRANT's answer: the granting pid and where its proof lies, or why the peer declined. */
    record Grant(long pid, long proofAddress, String declined) {
    }

    /**
     * Reads a READ_GRANT's answer.
     *
     * @return the grant or the decline; an ERROR (a range outside every window) comes back as {@code refused}
     */
    static Grant readGrant(Link channel, StringBuilder refused) throws IOException {
        byte status = readExactly(channel, 1).get();
        if (status == OK) {
            ByteBuffer granted = readExactly(channel, 16);
            return new Grant(granted.getLong(), granted.getLong(), null);
        }
        if (status != ERROR && status != DECLINED) {
            throw new ProtocolException("bad grant status " + status);
        }
        int length = readExactly(channel, 2).getShort() & 0xFFFF;
        byte[] text = new byte[length];
        readExactly(channel, length).get(text);
        String message = new String(text, StandardCharsets.UTF_8);
        if (status == ERROR) {
            refused.append(message);
            return null;
        }
        return new Grant(0, 0, message);
    }

    /** The revocation of a grant (its window closed), as an ERROR a reader of any version fails on. */
    static final String REVOKED_MESSAGE = "same-host copy grant revoked: the peer's operation was closed";

    /** Tells a granted peer that its grant is revoked; the caller holds the link's monitor (see EmbeddedWindow). */
    static void writeRevoked(Link channel) throws IOException {
        byte[] text = REVOKED_MESSAGE.getBytes(StandardCharsets.US_ASCII);
        writeFully(channel, ByteBuffer.allocate(3 + text.length).put(ERROR).putShort((short) text.length).put(text)
                .flip());
    }

    static void writeCopyOutcome(Link channel, boolean done) throws IOException {
        writeFully(channel, channel.scratch(1).put(done ? COPY_DONE : COPY_ABORTED).flip());
    }

    /** Reads the client's report after a grant: true for DONE, false for ABORTED. */
    static boolean readCopyOutcome(Link channel) throws IOException {
        byte outcome = readExactly(channel, 1).get();
        if (outcome != COPY_DONE && outcome != COPY_ABORTED) {
            throw new ProtocolException("bad copy outcome " + outcome);
        }
        return outcome == COPY_DONE;
    }

    /** Streams a region's bytes to the channel: host memory directly, GPU memory through {@code staging}. */
    static void sendMemory(Link link, MemoryType type, long address, long length, GpuStaging staging)
            throws IOException {
        if (type == MemoryType.VRAM) {
            staging.send(link, address, length);
        } else {
            sendMemory(link, address, length);
        }
    }

    /** Receives a region's bytes from the channel: into host memory directly, into GPU memory through {@code staging}. */
    static void receiveMemory(Link link, MemoryType type, long address, long length, GpuStaging staging)
            throws IOException {
        if (type == MemoryType.VRAM) {
            staging.receive(link, address, length);
        } else {
            receiveMemory(link, address, length);
        }
    }

    /** Streams {@code length} bytes at {@code address} to the channel, in views of at most 1 GiB. */
    static void sendMemory(Link link, long address, long length) throws IOException {
        long done = 0;
        while (done < length) {
            int chunk = (int) Math.min(NativeMemory.MAX_VIEW, length - done);
            writeFully(link, NativeMemory.view(address + done, chunk));
            done += chunk;
        }
    }

    /** Receives {@code length} bytes from the channel straight into memory at {@code address}. */
    static void receiveMemory(Link link, long address, long length) throws IOException {
        long done = 0;
        while (done < length) {
            int chunk = (int) Math.min(NativeMemory.MAX_VIEW, length - done);
            readFully(link, NativeMemory.view(address + done, chunk));
            done += chunk;
        }
    }

    /**
     * Whether ranges of {@code lengths} fit one inline request: at most {@link #INLINE_MAX_BYTES} in at most
     * {@link #INLINE_MAX_RANGES} ranges.
     */
    static boolean fitsInline(long[] lengths) {
        if (lengths.length > INLINE_MAX_RANGES) {
            return false;
        }
        long total = 0;
        for (long length : lengths) {
            total += length; // returns once past the limit: the sum stays below the limit plus one region's length
            if (total > INLINE_MAX_BYTES) {
                return false;
            }
        }
        return true;
    }

    /**
     * {@code head} and then the host memory ranges, in one gathering write (one system call, one segment for a
     * small transfer: the peer wakes once). Zero-length ranges are skipped.
     */
    static void writeWithMemory(Link link, ByteBuffer head, long[] addresses, long[] lengths, int count)
            throws IOException {
        if (count == 1) {
            writeWithMemory(link, head, addresses[0], lengths[0]);
            return;
        }
        ByteBuffer[] ranges = hostViews(addresses, lengths, count, 1);
        ranges[0] = head;
        link.writeFully(ranges);
    }

    /**
     * {@code head} and then one host memory range, in one gathering write: a small transfer's one range costs one
     * view and no array of views.
     */
    static void writeWithMemory(Link link, ByteBuffer head, long address, long length) throws IOException {
        if (length == 0) {
            link.writeFully(head);
        } else if (length <= NativeMemory.MAX_VIEW) {
            link.writeFully(head, NativeMemory.view(address, (int) length));
        } else {
            link.writeFully(head);
            sendMemory(link, address, length);
        }
    }

    /**
     * Streams host memory ranges' bytes to the link in order, in gathering writes: a block list costs one system
     * call per {@code IOV_MAX} blocks (the JDK splits a longer array), not one per block.
     */
    static void sendHostRanges(Link link, long[] addresses, long[] lengths, int count) throws IOException {
        if (count == 1) { // one view, no array of views
            sendMemory(link, addresses[0], lengths[0]);
            return;
        }
        link.writeFully(hostViews(addresses, lengths, count, 0));
    }

    /** Receives host memory ranges' bytes from the link in order, in scattering reads (as many blocks a call as have arrived). */
    static void receiveHostRanges(Link link, long[] addresses, long[] lengths, int count) throws IOException {
        if (count == 1) { // one view, no array of views
            receiveMemory(link, addresses[0], lengths[0]);
            return;
        }
        link.readFully(hostViews(addresses, lengths, count, 0));
    }

    /**
     * Direct buffers viewing the first {@code count} ranges in order (zero-length ones skipped, longer ones than
     * {@link NativeMemory#MAX_VIEW} split), after {@code leading} empty slots for the caller. Neighbouring ranges
     * share one view, sliced (a slice is plain Java; a view is a JNA call): a block list scattered over a pool costs
     * a few JNA calls, not one per block. A view may span unlisted memory between ranges; only its slices, each
     * inside a listed range, are ever read or written.
     */
    static ByteBuffer[] hostViews(long[] addresses, long[] lengths, int count, int leading) {
        int parts = leading;
        for (int i = 0; i < count; i++) {
            parts += (int) ((lengths[i] + NativeMemory.MAX_VIEW - 1) / NativeMemory.MAX_VIEW);
        }
        ByteBuffer[] buffers = new ByteBuffer[parts];
        int part = leading;
        int i = 0;
        while (i < count) {
            if (lengths[i] == 0) {
                i++;
                continue;
            }
            if (lengths[i] > NativeMemory.MAX_VIEW) { // a range of its own, in views of at most MAX_VIEW
                for (long done = 0; done < lengths[i]; ) {
                    int chunk = (int) Math.min(NativeMemory.MAX_VIEW, lengths[i] - done);
                    buffers[part++] = NativeMemory.view(addresses[i] + done, chunk);
                    done += chunk;
                }
                i++;
                continue;
            }
            // The ranges from i on whose extent stays within one view.
            long low = addresses[i];
            long high = addresses[i] + lengths[i];
            int end = i + 1;
            while (end < count && lengths[end] <= NativeMemory.MAX_VIEW) {
                long nextLow = Math.min(low, addresses[end]);
                long nextHigh = Math.max(high, addresses[end] + lengths[end]);
                if (nextHigh - nextLow > NativeMemory.MAX_VIEW) {
                    break;
                }
                low = nextLow;
                high = nextHigh;
                end++;
            }
            ByteBuffer span = NativeMemory.view(low, (int) (high - low));
            for (; i < end; i++) {
                if (lengths[i] > 0) {
                    buffers[part++] = span.slice((int) (addresses[i] - low), (int) lengths[i]);
                }
            }
        }
        return part == parts ? buffers : Arrays.copyOf(buffers, part);
    }

    /** Reads {@code length} bytes and drops them (a refused WRITE_INLINE's data), a scratch buffer at a time. */
    static void discard(Link link, long length) throws IOException {
        long left = length;
        while (left > 0) {
            ByteBuffer chunk = link.scratch((int) Math.min(Link.SCRATCH_BYTES, left));
            link.readFully(chunk);
            left -= chunk.limit();
        }
    }

    static void writeFully(Link link, ByteBuffer buffer) throws IOException {
        link.writeFully(buffer);
    }

    static void readFully(Link link, ByteBuffer buffer) throws IOException {
        link.readFully(buffer);
    }

    /** Sends a {@link #FAIL} report for the window {@code credential} of agent {@code agent} (UTF-8). */
    static void writeFailureReport(Link link, byte[] agent, byte[] credential, String reporter, String cause)
            throws IOException {
        byte[] who = FailureReports.utf8Bounded(reporter, FailureReports.MAX_NAME_BYTES);
        byte[] why = FailureReports.utf8Bounded(cause, FailureReports.MAX_CAUSE_BYTES);
        ByteBuffer buffer = link.scratch(requestBytes(agent, credential, 0) + 4 + who.length + why.length);
        buffer.putInt(MAGIC).put(FAIL).putShort((short) agent.length).putShort((short) credential.length).putInt(0)
                .put(agent).put(credential).putShort((short) who.length).put(who).putShort((short) why.length).put(why);
        writeFully(link, buffer.flip());
    }

    /**
     * Reads the rest of a {@link #FAIL} report: {reporter, cause}, each made printable.
     *
     * @throws ProtocolException when a length exceeds its bound
     */
    static String[] readFailureReport(Link link) throws IOException {
        String reporter = readBoundedText(link, FailureReports.MAX_NAME_BYTES);
        String cause = readBoundedText(link, FailureReports.MAX_CAUSE_BYTES);
        return new String[] {reporter, cause};
    }

    private static String readBoundedText(Link link, int maxBytes) throws IOException {
        int length = readExactly(link, 2).getShort() & 0xFFFF;
        if (length > maxBytes) {
            throw new ProtocolException("failure report text of " + length + " bytes (at most " + maxBytes + ")");
        }
        byte[] text = new byte[length];
        readExactly(link, length).get(text);
        return FailureReports.printable(text, 0, length, maxBytes);
    }

    /** The next {@code length} bytes, in the link's scratch buffer (valid until its next use). */
    private static ByteBuffer readExactly(Link link, int length) throws IOException {
        ByteBuffer buffer = link.scratch(length);
        link.readFully(buffer);
        return buffer.flip();
    }

    /** A peer offered shared-secret authentication to a server that has none configured. */
    static final class UnexpectedHelloException extends IOException {
        private static final long serialVersionUID = 1L;

        UnexpectedHelloException() {
            super("peer offered shared-secret authentication, but this server has no secret configured");
        }
    }

    /** A peer speaks version 1 of this protocol. */
    static final class OutdatedPeerException extends IOException {
        private static final long serialVersionUID = 1L;

        OutdatedPeerException() {
            super("this peer speaks embedded-transport protocol version 2 (per-window credentials); "
                    + "upgrade nixl-connect on the requesting side");
        }
    }

    /** The peer answered a request with an ERROR it does not expect to be retried. */
    static final class RefusedException extends IOException {
        private static final long serialVersionUID = 1L;

        RefusedException(String message) {
            super(message);
        }
    }

    /** The peer broke the protocol; the connection is dropped. */
    static final class ProtocolException extends IOException {
        private static final long serialVersionUID = 1L;

        ProtocolException(String message) {
            super(message);
        }
    }
}

