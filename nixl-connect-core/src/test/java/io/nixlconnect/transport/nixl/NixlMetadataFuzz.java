package io.nixlconnect.transport.nixl;

import com.sun.jna.Memory;
import com.sun.jna.Pointer;
import io.nixlconnect.transport.InvalidAgentMetadataException;
import io.nixlconnect.transport.MemoryRegion;
import io.nixlconnect.transport.MemoryType;
import io.nixlconnect.transport.TransferHandle;
import io.nixlconnect.transport.TransferOp;
import io.nixlconnect.transport.TransportAgent;
import io.nixlconnect.transport.TransportException;

import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The child JVM of {@link NixlMetadataFuzzTest}: mutates a real agent metadata blob (from a real NIXL
 * agent with two registered DRAM regions) and hands each mutation to {@link NixlAgentCore#loadRemote}
 * exactly as a peer's metadata would arrive: refused in Java, refused by NIXL, or loaded (and, in the
 * {@code opaque} campaign, read from: 64 bytes through the endpoint and key UCX made of the mutated
 * bytes). A mutation that crashes NIXL kills this JVM; the line {@code AT i} printed before each native
 * call names it.
 *
 * <pre>
 * java ... NixlMetadataFuzz fuzz SEED COUNT SECONDS   → "AT i" lines, then "SUMMARY total java nixl loaded"
 * java ... NixlMetadataFuzz opaque SEED COUNT SECONDS → the same, mutating only UCX's worker address and keys
 * java ... NixlMetadataFuzz show|show-opaque SEED I  → the differences mutation I makes to a real blob
 * java ... NixlMetadataFuzz dump FILE                 → writes a real blob to FILE
 * </pre>
 */
public final class NixlMetadataFuzz {

    private static final long[] WIDE = {0, 1, 2, 4, 5, 7, 8, 9, 16, 255, 0x7fffffffL, 0xfb000000L, 0xffffffffL,
            1L << 32, Long.MAX_VALUE, -1, -8, Long.MIN_VALUE};
    private static final int[] NARROW = {0, 1, 2, 3, 4, 5, 6, 0xff, 0x7fffffff, 0xfb000000, 0xffffffff, 0x80000000};
    private static final byte[] BYTES = {0, 1, 0x7f, (byte) 0x80, (byte) 0xff, '|', 'n', 't'};

    private NixlMetadataFuzz() {
    }

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        NixlTransport transport = NixlTransport.open(NixlTestSupport.settings());
        TransportAgent source = transport.createAgent("fuzz-source-" + ProcessHandle.current().pid());
        Memory first = new Memory(4096);
        Memory second = new Memory(1 << 20);
        source.registerMemory(new MemoryRegion(Pointer.nativeValue(first), first.size(), MemoryType.DRAM, 0));
        source.registerMemory(new MemoryRegion(Pointer.nativeValue(second), second.size(), MemoryType.DRAM, 0));
        byte[] original = source.localMetadata();
        if (args[0].equals("dump")) {
            Files.write(Path.of(args[1]), original);
            out.println("DUMPED " + original.length);
            return;
        }
        if (args[0].equals("show") || args[0].equals("show-opaque")) { // show SEED I: a mutation's differences
            SplittableRandom random = new SplittableRandom(Long.parseLong(args[1]) * 1_000_003L + Integer.parseInt(args[2]));
            byte[] mutated = args[0].equals("show") ? mutate(original, structuralOffsets(original), random)
                    : mutateOpaque(renamed(original, Integer.parseInt(args[2])), opaqueRanges(original), random);
            for (int[] range : opaqueRanges(original)) {
                out.println("OPAQUE " + range[0] + ".." + range[1]);
            }
            out.println("LENGTH " + original.length + " -> " + mutated.length);
            for (int p = 0; p < Math.max(original.length, mutated.length); p++) {
                int was = p < original.length ? original[p] & 0xff : -1;
                int now = p < mutated.length ? mutated[p] & 0xff : -1;
                if (was != now) {
                    out.printf("DIFF %d: %02x -> %02x%n", p, was, now);
                }
            }
            return;
        }
        long seed = Long.parseLong(args[1]);
        int count = Integer.parseInt(args[2]);
        long deadline = System.nanoTime() + Long.parseLong(args[3]) * 1_000_000_000L;
        NixlMetadataFormat.validate(original); // the real blob must pass
        TransportAgent target = transport.createAgent("fuzz-target-" + ProcessHandle.current().pid());
        Memory landingMemory = new Memory(READ_BYTES);
        MemoryRegion landing = new MemoryRegion(Pointer.nativeValue(landingMemory), READ_BYTES, MemoryType.DRAM, 0);
        target.registerMemory(landing);
        target.loadRemoteAgent(original);
        int[] structural = structuralOffsets(original);
        List<int[]> opaque = opaqueRanges(original);
        boolean opaqueOnly = args[0].equals("opaque");
        Path last = System.getProperty("nixl.fuzz.last") == null ? null : Path.of(System.getProperty("nixl.fuzz.last"));
        if (last != null) {
            Files.write(Path.of(last + ".original"), original);
        }
        int total = 0;
        int refusedInJava = 0;
        int refusedByNixl = 0;
        int loaded = 0;
        for (int i = 0; i < count && System.nanoTime() < deadline; i++) {
            SplittableRandom random = new SplittableRandom(seed * 1_000_003L + i);
            byte[] mutated = opaqueOnly ? mutateOpaque(renamed(original, i), opaque, random)
                    : mutate(original, structural, random);
            total++;
            try {
                NixlMetadataFormat.validate(mutated);
            } catch (InvalidAgentMetadataException e) {
                refusedInJava++;
                continue;
            }
            out.println("AT " + i);
            if (last != null) { // -Dnixl.fuzz.last=FILE keeps the blob about to be loaded, to replay a crash
                Files.write(last, mutated);
            }
            try {
                String peer = target.loadRemoteAgent(mutated);
                loaded++;
                if (opaqueOnly) { // the endpoint and keys UCX made from the mutated bytes are used too
                    readFrom(target, landing, peer, Pointer.nativeValue(first), out);
                }
            } catch (InvalidAgentMetadataException e) {
                refusedInJava++;
            } catch (TransportException e) {
                refusedByNixl++;
            }
        }
        target.close();
        source.close();
        transport.close();
        out.println("TRANSFERS " + transfers[0] + " completed, " + transfers[1] + " failed, " + transfers[2]
                + " timed out");
        out.println("SUMMARY " + total + " " + refusedInJava + " " + refusedByNixl + " " + loaded);
    }

    private static final int READ_BYTES = 64;
    /** Completed, failed, timed out. */
    private static final int[] transfers = new int[3];

    /** READs 64 bytes of the source's first region through the peer loaded from mutated metadata. */
    private static void readFrom(TransportAgent target, MemoryRegion landing, String peer, long address,
            PrintStream out) {
        TransferHandle handle;
        try {
            handle = target.postTransfer(TransferOp.READ, List.of(landing), peer,
                    List.of(new MemoryRegion(address, READ_BYTES, MemoryType.DRAM, 0)),
                    "fuzz".getBytes(StandardCharsets.US_ASCII));
        } catch (TransportException e) {
            transfers[1]++;
            return;
        }
        try {
            handle.completion().get(2, TimeUnit.SECONDS);
            transfers[0]++;
        } catch (TimeoutException e) {
            handle.cancel();
            transfers[2]++;
        } catch (ExecutionException e) {
            transfers[1]++;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /**
     * Byte ranges {@code [start, end)} of the values NIXL hands to UCX unparsed: each backend's connection
     * info (the UCX worker address) and each descriptor's remote key (after its 24-byte addr/len/devId).
     */
    static List<int[]> opaqueRanges(byte[] blob) {
        List<int[]> ranges = new ArrayList<>();
        int p = "nixlSerDes|".length();
        boolean inDescriptors = false;
        while (p < blob.length) {
            int tagEnd = p;
            while (tagEnd < blob.length && blob[tagEnd] >= 'A' && blob[tagEnd] <= 'z' && blob[tagEnd] != '|') {
                tagEnd++;
            }
            String tag = new String(blob, p, tagEnd - p, StandardCharsets.US_ASCII);
            int length = (int) ByteBuffer.wrap(blob, tagEnd, 8).order(ByteOrder.LITTLE_ENDIAN).getLong();
            int value = tagEnd + 8;
            if (tag.equals("c")) {
                ranges.add(new int[] {value, value + length});
            } else if (tag.isEmpty() && inDescriptors) {
                ranges.add(new int[] {value + 24, value + length});
            } else if (tag.equals("n")) {
                inDescriptors = true;
            } else if (tag.equals("bknd")) {
                inDescriptors = false;
            }
            p = value + length + 1;
        }
        return ranges;
    }

    /** Offsets of every length field of the blob (a uint64 whose value ends at a '|'), and of 4/8-byte values. */
    static int[] structuralOffsets(byte[] blob) {
        List<Integer> offsets = new ArrayList<>();
        for (int p = 0; p + 8 <= blob.length; p++) {
            long value = ByteBuffer.wrap(blob, p, 8).order(ByteOrder.LITTLE_ENDIAN).getLong();
            if (value >= 0 && value < blob.length && p + 8 + value < blob.length && blob[(int) (p + 8 + value)] == '|') {
                offsets.add(p);
                if (value == 4 || value == 8) {
                    offsets.add(-(p + 8) - 1); // a value field: negative marks "write a value of this width"
                }
            }
        }
        return offsets.stream().mapToInt(Integer::intValue).toArray();
    }

    /**
     * The blob under an agent name of the same length unique to mutation {@code i}, so that each mutation is
     * a first load (UCX creates an endpoint and unpacks the keys) rather than a replacement of one peer.
     */
    static byte[] renamed(byte[] original, int i) {
        byte[] blob = original.clone();
        int nameAt = "nixlSerDes|Agent".length() + Long.BYTES;
        int length = (int) ByteBuffer.wrap(blob, nameAt - Long.BYTES, Long.BYTES).order(ByteOrder.LITTLE_ENDIAN).getLong();
        String suffix = Integer.toString(i, 36);
        for (int k = 0; k < suffix.length() && k < length; k++) {
            blob[nameAt + length - 1 - k] = (byte) suffix.charAt(suffix.length() - 1 - k);
        }
        return blob;
    }

    /** Changes 1 to 4 bytes inside the UCX worker address or a remote key, keeping NIXL's framing intact. */
    static byte[] mutateOpaque(byte[] original, List<int[]> opaque, SplittableRandom random) {
        byte[] blob = original.clone();
        for (int k = 0, n = 1 + random.nextInt(4); k < n; k++) {
            int[] range = opaque.get(random.nextInt(opaque.size()));
            int at = range[0] + random.nextInt(range[1] - range[0]);
            blob[at] = random.nextBoolean() ? (byte) (blob[at] ^ (1 << random.nextInt(8))) : BYTES[random.nextInt(BYTES.length)];
        }
        return blob;
    }

    static byte[] mutate(byte[] original, int[] structural, SplittableRandom random) {
        byte[] blob = original.clone();
        int rounds = 1 + (random.nextInt(4) == 0 ? random.nextInt(3) : 0);
        for (int r = 0; r < rounds; r++) {
            switch (random.nextInt(8)) {
                case 0 -> blob[random.nextInt(blob.length)] ^= (byte) (1 << random.nextInt(8));
                case 1 -> blob[random.nextInt(blob.length)] = BYTES[random.nextInt(BYTES.length)];
                case 2, 3 -> {
                    int at = structural[random.nextInt(structural.length)];
                    if ((at >= 0 ? at : -at - 1) + 8 > blob.length) {
                        blob[random.nextInt(blob.length)] ^= (byte) (1 << random.nextInt(8)); // shortened earlier
                    } else if (at >= 0) {
                        long value = random.nextBoolean() ? WIDE[random.nextInt(WIDE.length)]
                                : ByteBuffer.wrap(blob, at, 8).order(ByteOrder.LITTLE_ENDIAN).getLong() + random.nextInt(-9, 10);
                        ByteBuffer.wrap(blob, at, 8).order(ByteOrder.LITTLE_ENDIAN).putLong(value);
                    } else {
                        int valueAt = -at - 1;
                        if (random.nextBoolean()) {
                            ByteBuffer.wrap(blob, valueAt, 8).order(ByteOrder.LITTLE_ENDIAN).putLong(WIDE[random.nextInt(WIDE.length)]);
                        } else {
                            ByteBuffer.wrap(blob, valueAt, 4).order(ByteOrder.LITTLE_ENDIAN).putInt(NARROW[random.nextInt(NARROW.length)]);
                        }
                    }
                }
                case 4 -> blob = Arrays.copyOf(blob, random.nextInt(blob.length));
                case 5 -> {
                    int at = random.nextInt(blob.length + 1);
                    byte[] insert = new byte[1 + random.nextInt(16)];
                    random.nextBytes(insert);
                    byte[] grown = new byte[blob.length + insert.length];
                    System.arraycopy(blob, 0, grown, 0, at);
                    System.arraycopy(insert, 0, grown, at, insert.length);
                    System.arraycopy(blob, at, grown, at + insert.length, blob.length - at);
                    blob = grown;
                }
                case 6 -> {
                    int from = random.nextInt(blob.length);
                    int to = Math.min(blob.length, from + 1 + random.nextInt(32));
                    byte[] shrunk = new byte[blob.length - (to - from)];
                    System.arraycopy(blob, 0, shrunk, 0, from);
                    System.arraycopy(blob, to, shrunk, from, blob.length - to);
                    blob = shrunk;
                }
                default -> {
                    for (int k = 0; k < 1 + random.nextInt(8); k++) {
                        blob[random.nextInt(blob.length)] = (byte) random.nextInt(256);
                    }
                }
            }
            if (blob.length == 0) {
                blob = new byte[] {0};
            }
        }
        return blob;
    }
}
