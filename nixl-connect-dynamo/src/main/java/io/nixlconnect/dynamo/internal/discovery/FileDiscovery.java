package io.nixlconnect.dynamo.internal.discovery;

import io.nixlconnect.dynamo.DynamoDiscoveryException;
import io.nixlconnect.dynamo.DynamoException;
import io.nixlconnect.dynamo.DynamoInstance;
import io.nixlconnect.dynamo.EndpointId;
import io.nixlconnect.dynamo.internal.Counters;
import io.nixlconnect.dynamo.internal.Threads;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.ClosedWatchServiceException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.StandardWatchEventKinds;
import java.nio.file.WatchService;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileTime;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.LongConsumer;
import java.util.function.LongFunction;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Dynamo's file discovery ({@code DYN_DISCOVERY_BACKEND=file}): one file per instance in {@code DYN_FILE_KV/v1/instances},
 * named by its percent-encoded key ({@code ns%2Fcomp%2Fep%2F{id:x}}), written to a {@code .tmp_} file and hard-linked
 * into place; alive while its modification time is within the TTL, which its owner keeps touching. Any process may
 * delete an expired file, and this one does, as Dynamo's do. Changes are seen through the directory's watch service,
 * and by a rescan each second (expiry makes no event).
 */
public final class FileDiscovery implements Discovery {

    private static final Logger LOG = LoggerFactory.getLogger(FileDiscovery.class);
    /** Most directory entries one scan looks at. */
    static final int MAX_ENTRIES = 10_000;
    private static final String TEMP_PREFIX = ".tmp_";

    private final Path directory;
    private final Duration ttl;
    private final Counters counters;
    private final long instanceId;
    private final ScheduledExecutorService scheduler;
    private final Map<EndpointId, List<FileWatch>> watches = new ConcurrentHashMap<>();
    private final Map<String, Cached> cache = new ConcurrentHashMap<>();
    private final Set<Object> rejected = ConcurrentHashMap.newKeySet();
    private final Map<Path, byte[]> owned = new ConcurrentHashMap<>();
    private final Object scanLock = new Object();
    private volatile @Nullable WatchService watchService;
    private volatile @Nullable Thread scanner;
    private volatile @Nullable ScheduledFuture<?> keepAlive;
    private volatile boolean healthy = true;
    private volatile boolean closed;

    private record Cached(Object fileKey, long size, @Nullable DynamoInstance instance) {
    }

    public FileDiscovery(Path root, Duration ttl, Counters counters) {
        this.directory = root.resolve("v1").resolve("instances");
        this.ttl = ttl;
        this.counters = counters;
        this.instanceId = new SecureRandom().nextLong();
        this.scheduler = Threads.scheduler("dynamo-file-discovery");
    }

    public Path directory() {
        return directory;
    }

    @Override
    public long instanceId() {
        return instanceId;
    }

    @Override
    public boolean healthy() {
        return healthy && !closed;
    }

    private void ensureDirectory() {
        try {
            Files.createDirectories(directory);
        } catch (IOException e) {
            healthy = false;
            counters.discoveryErrors.increment();
            throw new DynamoDiscoveryException("cannot create the discovery directory " + directory + ": " + e, e);
        }
    }

    // ---- watching ----

    private final class FileWatch implements Watch {
        private final EndpointId endpoint;
        private final Listener listener;
        private volatile List<DynamoInstance> instances = List.of();

        FileWatch(EndpointId endpoint, Listener listener) {
            this.endpoint = endpoint;
            this.listener = listener;
        }

        @Override
        public List<DynamoInstance> instances() {
            return instances;
        }

        void update(List<DynamoInstance> now) {
            if (!now.equals(instances)) {
                instances = now;
                try {
                    listener.instancesChanged(now);
                } catch (RuntimeException e) {
                    LOG.warn("a discovery listener of {} failed", endpoint, e);
                }
            }
        }

        @Override
        public void close() {
            watches.computeIfPresent(endpoint, (key, list) -> {
                list.remove(this);
                return list.isEmpty() ? null : list;
            });
        }
    }

    @Override
    public Watch watch(EndpointId endpoint, Listener listener) {
        if (closed) {
            throw new DynamoException("the runtime is closed");
        }
        ensureDirectory();
        FileWatch watch = new FileWatch(endpoint, listener);
        watches.computeIfAbsent(endpoint, key -> new CopyOnWriteArrayList<>()).add(watch);
        startScanner();
        scan();
        return watch;
    }

    private synchronized void startScanner() {
        if (scanner != null || closed) {
            return;
        }
        try {
            watchService = directory.getFileSystem().newWatchService();
            directory.register(watchService, StandardWatchEventKinds.ENTRY_CREATE, StandardWatchEventKinds.ENTRY_DELETE,
                    StandardWatchEventKinds.ENTRY_MODIFY);
        } catch (IOException e) {
            LOG.warn("cannot watch {} for changes ({}); rescanning each second only", directory, e.toString());
        }
        scanner = Threads.start("dynamo-file-discovery-scanner", this::scanLoop);
    }

    private void scanLoop() {
        long interval = Math.max(200, Math.min(1000, ttl.toMillis() / 3));
        while (!closed) {
            try {
                WatchService service = watchService;
                if (service != null) {
                    var key = service.poll(interval, TimeUnit.MILLISECONDS);
                    if (key != null) {
                        key.pollEvents();
                        key.reset();
                    }
                } else {
                    Thread.sleep(interval);
                }
                scan();
            } catch (ClosedWatchServiceException | InterruptedException e) {
                return;
            } catch (RuntimeException e) {
                LOG.warn("file discovery scan of {} failed", directory, e);
            }
        }
    }

    /** Reads the directory once and tells each watch what changed for its endpoint. */
    void scan() {
        if (watches.isEmpty()) {
            return;
        }
        synchronized (scanLock) {
            Map<EndpointId, List<DynamoInstance>> found = new HashMap<>();
            for (EndpointId endpoint : watches.keySet()) {
                found.put(endpoint, new ArrayList<>());
            }
            Set<String> seen = new HashSet<>();
            long deadline = System.currentTimeMillis() - ttl.toMillis();
            int entries = 0;
            try (DirectoryStream<Path> stream = Files.newDirectoryStream(directory)) {
                for (Path file : stream) {
                    if (++entries > MAX_ENTRIES) {
                        rejectOnce("too-many-entries", "discovery directory " + directory + " holds more than "
                                + MAX_ENTRIES + " entries; the rest are not read");
                        break;
                    }
                    String name = file.getFileName().toString();
                    if (name.startsWith(".")) {
                        continue; // Dynamo's .tmp_ files, being written
                    }
                    String key = decode(name);
                    String[] parts = key == null ? null : key.split("/", -1);
                    if (parts == null || parts.length != 4) {
                        rejectOnce(name, "discovery file " + name + " is not named ns%2Fcomp%2Fep%2Fid");
                        continue;
                    }
                    EndpointId endpoint;
                    try {
                        endpoint = new EndpointId(parts[0], parts[1], parts[2]);
                    } catch (IllegalArgumentException e) {
                        rejectOnce(name, "discovery file " + name + " names an invalid endpoint");
                        continue;
                    }
                    List<DynamoInstance> list = found.get(endpoint);
                    if (list == null) {
                        continue; // nobody here follows that endpoint
                    }
                    seen.add(name);
                    DynamoInstance instance = read(file, name, parts[3], endpoint, deadline);
                    if (instance != null) {
                        list.add(instance);
                    }
                }
                healthy = true;
            } catch (NoSuchFileException e) {
                // nothing registered yet
            } catch (IOException | RuntimeException e) {
                healthy = false;
                counters.discoveryErrors.increment();
                LOG.warn("cannot read the discovery directory {}: {}", directory, e.toString());
                return;
            }
            cache.keySet().retainAll(seen);
            for (Map.Entry<EndpointId, List<DynamoInstance>> entry : found.entrySet()) {
                List<DynamoInstance> instances = entry.getValue();
                instances.sort(Comparator.comparing(DynamoInstance::instanceId, Long::compareUnsigned));
                List<DynamoInstance> now = List.copyOf(instances);
                List<FileWatch> listeners = watches.get(entry.getKey());
                if (listeners != null) {
                    for (FileWatch watch : listeners) {
                        watch.update(now);
                    }
                }
            }
        }
    }

    private @Nullable DynamoInstance read(Path file, String name, String idHex, EndpointId endpoint, long deadline) {
        BasicFileAttributes attributes;
        try {
            attributes = Files.readAttributes(file, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
        } catch (IOException e) {
            return null; // gone between the listing and now
        }
        Object fileKey = attributes.fileKey() != null ? attributes.fileKey() : name;
        if (!attributes.isRegularFile()) {
            rejectOnce(fileKey, "discovery entry " + name + " is not a regular file");
            return null;
        }
        if (attributes.lastModifiedTime().toMillis() < deadline && !owned.containsKey(file)) {
            deleteExpired(file, name);
            return null;
        }
        Cached cached = cache.get(name);
        if (cached != null && cached.fileKey.equals(fileKey) && cached.size == attributes.size()) {
            return cached.instance;
        }
        DynamoInstance instance = null;
        if (attributes.size() > InstanceRecord.MAX_RECORD) {
            rejectOnce(fileKey, "discovery file " + name + " of " + attributes.size() + " bytes is larger than "
                    + InstanceRecord.MAX_RECORD);
        } else {
            try {
                byte[] bytes = readBounded(file);
                instance = InstanceRecord.parse(bytes);
                if (!instance.endpoint().equals(endpoint) || !Long.toHexString(instance.instanceId()).equals(idHex)) {
                    rejectOnce(fileKey, "discovery file " + name + " holds the record of another instance ("
                            + instance.endpoint() + " " + instance.instanceIdHex() + ")");
                    instance = null;
                }
            } catch (IOException e) {
                return null;
            } catch (DynamoException e) {
                rejectOnce(fileKey, "discovery file " + name + " is refused: " + e.getMessage());
            }
        }
        cache.put(name, new Cached(fileKey, attributes.size(), instance));
        return instance;
    }

    private static byte[] readBounded(Path file) throws IOException {
        try (InputStream in = Files.newInputStream(file, StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS)) {
            byte[] bytes = in.readNBytes(InstanceRecord.MAX_RECORD + 1);
            if (bytes.length > InstanceRecord.MAX_RECORD) {
                throw new io.nixlconnect.dynamo.DynamoProtocolException("discovery record larger than "
                        + InstanceRecord.MAX_RECORD + " bytes");
            }
            return bytes;
        }
    }

    private void rejectOnce(Object fileKey, String message) {
        if (rejected.size() < 100_000 && rejected.add(fileKey)) {
            counters.discoveryEntriesRejected.increment();
            LOG.warn("{}", message);
        }
    }

    private void deleteExpired(Path file, String name) {
        try {
            // Gone past its TTL: its owner stopped touching it (a killed process). Dynamo's stores delete these too.
            Files.deleteIfExists(file);
            LOG.info("deleted the expired discovery file {}", name);
        } catch (IOException e) {
            LOG.debug("could not delete the expired discovery file {}: {}", name, e.toString());
        }
    }

    // ---- registering ----

    @Override
    public void onInstanceIdChange(LongConsumer listener) {
        // a file-discovery instance id never changes
    }

    @Override
    public Registration register(EndpointId endpoint, LongFunction<DynamoInstance> recordFor) {
        DynamoInstance instance = recordFor.apply(instanceId);
        if (closed) {
            throw new DynamoException("the runtime is closed");
        }
        ensureDirectory();
        String key = InstanceRecord.key(instance.endpoint(), instance.instanceId()).substring(InstanceRecord.PREFIX.length());
        Path file = directory.resolve(encode(key));
        byte[] record = InstanceRecord.write(instance);
        try {
            publish(file, record);
        } catch (IOException e) {
            healthy = false;
            counters.discoveryErrors.increment();
            throw new DynamoDiscoveryException("cannot write the discovery file " + file + ": " + e, e);
        }
        owned.put(file, record);
        startKeepAlive();
        return () -> {
            owned.remove(file);
            try {
                Files.deleteIfExists(file);
            } catch (IOException e) {
                LOG.warn("cannot delete the discovery file {}: {}", file, e.toString());
            }
        };
    }

    /** Writes a temporary file and links it into place, so that no reader sees it half written. */
    private void publish(Path file, byte[] record) throws IOException {
        Path temp = directory.resolve(TEMP_PREFIX + String.format("%016x", new SecureRandom().nextLong()));
        Files.write(temp, record, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
        try {
            Files.createLink(file, temp);
        } catch (FileAlreadyExistsException | UnsupportedOperationException e) {
            // ours from before (re-published), or a file system without hard links: replace it atomically
            Files.move(temp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } finally {
            Files.deleteIfExists(temp);
        }
    }

    private synchronized void startKeepAlive() {
        if (keepAlive == null && !closed) {
            long every = Math.max(1000, ttl.toMillis() / 3);
            keepAlive = scheduler.scheduleWithFixedDelay(this::touchOwned, every, every, TimeUnit.MILLISECONDS);
        }
    }

    private void touchOwned() {
        FileTime now = FileTime.fromMillis(System.currentTimeMillis());
        boolean ok = true;
        for (Map.Entry<Path, byte[]> entry : owned.entrySet()) {
            try {
                Files.setLastModifiedTime(entry.getKey(), now);
            } catch (NoSuchFileException e) {
                try {
                    // Someone deleted it as expired (this process was paused past the TTL): write it again.
                    publish(entry.getKey(), entry.getValue());
                } catch (IOException again) {
                    ok = false;
                }
            } catch (IOException e) {
                ok = false;
            }
        }
        if (!ok) {
            counters.discoveryErrors.increment();
        }
        healthy = ok;
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        ScheduledFuture<?> task = keepAlive;
        if (task != null) {
            task.cancel(false);
        }
        scheduler.shutdownNow();
        for (Path file : owned.keySet()) {
            try {
                Files.deleteIfExists(file);
            } catch (IOException e) {
                LOG.warn("cannot delete the discovery file {}: {}", file, e.toString());
            }
        }
        owned.clear();
        WatchService service = watchService;
        if (service != null) {
            try {
                service.close();
            } catch (IOException e) {
                // closing
            }
        }
        Thread thread = scanner;
        if (thread != null) {
            thread.interrupt();
        }
        watches.clear();
    }

    // ---- names ----

    /** Percent-encodes a key as Dynamo's {@code Key::url_safe} does: all but {@code A-Z a-z 0-9 - _ . ~}. */
    static String encode(String key) {
        StringBuilder out = new StringBuilder(key.length() + 16);
        for (byte b : key.getBytes(StandardCharsets.UTF_8)) {
            int c = b & 0xff;
            if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_'
                    || c == '.' || c == '~') {
                out.append((char) c);
            } else {
                out.append('%').append(Character.toUpperCase(Character.forDigit(c >> 4, 16)))
                        .append(Character.toUpperCase(Character.forDigit(c & 15, 16)));
            }
        }
        return out.toString();
    }

    /** The key a file name encodes, or null when it is not well-formed percent-encoding of UTF-8. */
    static @Nullable String decode(String name) {
        byte[] out = new byte[name.length()];
        int n = 0;
        for (int i = 0; i < name.length(); i++) {
            char c = name.charAt(i);
            if (c == '%') {
                if (i + 2 >= name.length()) {
                    return null;
                }
                int high = Character.digit(name.charAt(i + 1), 16);
                int low = Character.digit(name.charAt(i + 2), 16);
                if (high < 0 || low < 0) {
                    return null;
                }
                out[n++] = (byte) (high << 4 | low);
                i += 2;
            } else if (c < 0x80) {
                out[n++] = (byte) c;
            } else {
                return null;
            }
        }
        try {
            return StandardCharsets.UTF_8.newDecoder().decode(java.nio.ByteBuffer.wrap(out, 0, n)).toString();
        } catch (java.nio.charset.CharacterCodingException e) {
            return null;
        }
    }

    @Override
    public String toString() {
        return "file discovery in " + Objects.toString(directory);
    }
}
