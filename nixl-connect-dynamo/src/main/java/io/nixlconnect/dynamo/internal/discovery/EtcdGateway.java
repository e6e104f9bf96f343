package io.nixlconnect.dynamo.internal.discovery;

import io.nixlconnect.dynamo.DynamoDiscoveryException;
import io.nixlconnect.dynamo.DynamoProtocolException;
import io.nixlconnect.dynamo.internal.codec.JsonValues;
import io.nixlconnect.dynamo.internal.Threads;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Flow;
import java.util.concurrent.atomic.AtomicReference;
import org.jspecify.annotations.Nullable;

/**
 * etcd v3 through its JSON gateway ({@code /v3/kv/range}, {@code /v3/kv/txn}, {@code /v3/lease/*}, {@code /v3/watch})
 * over the JDK's HTTP client: the few calls discovery needs, with no gRPC stack (docs/dynamo.md says why). Keys and
 * values travel base64-encoded, 64-bit numbers as JSON strings. A watch is a streamed response of one JSON document
 * per line, read as it arrives and cancellable from any thread.
 */
public final class EtcdGateway implements AutoCloseable {

    /** Longest line of a watch stream read (one event batch). */
    static final int MAX_WATCH_LINE = 8 * 1024 * 1024;
    /** Largest response body read. */
    static final int MAX_RESPONSE = 64 * 1024 * 1024;

    private final List<URI> endpoints;
    private final Duration timeout;
    private final ExecutorService executor;
    private final HttpClient http;
    private volatile int preferred;

    /** One key-value pair. */
    public record KeyValue(String key, byte[] value, long modRevision, long lease) {
    }

    /** A range's pairs and the store's revision when it was read. */
    public record Range(List<KeyValue> kvs, long revision) {
    }

    /** A watch event: a put (value present) or a delete. */
    public record Event(boolean delete, KeyValue kv) {
    }

    /** What a watch hears. */
    public interface WatchListener {
        void events(List<Event> events, long revision);

        /** The watch ended (the server went away, the history was compacted, or a malformed line came). */
        void ended(@Nullable Throwable cause);
    }

    public EtcdGateway(List<URI> endpoints, Duration timeout) {
        this.endpoints = List.copyOf(endpoints);
        this.timeout = timeout;
        this.executor = Threads.cached("dynamo-etcd-http");
        this.http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(timeout)
                .executor(executor).build();
    }

    private static String b64(String text) {
        return Base64.getEncoder().encodeToString(text.getBytes(StandardCharsets.UTF_8));
    }

    private static String b64(byte[] bytes) {
        return Base64.getEncoder().encodeToString(bytes);
    }

    /** The key just past every key with {@code prefix} (etcd's range_end for a prefix). */
    static byte[] prefixEnd(String prefix) {
        byte[] end = prefix.getBytes(StandardCharsets.UTF_8);
        for (int i = end.length - 1; i >= 0; i--) {
            if ((end[i] & 0xff) < 0xff) {
                end[i]++;
                return java.util.Arrays.copyOf(end, i + 1);
            }
        }
        return new byte[] {0};
    }

    /** POSTs a JSON document to the first endpoint that answers; the answer's JSON object. */
    Map<?, ?> call(String path, Map<String, Object> body) {
        byte[] json = JsonValues.write(body);
        IOException last = null;
        for (int attempt = 0; attempt < endpoints.size(); attempt++) {
            int index = (preferred + attempt) % endpoints.size();
            URI uri = endpoints.get(index).resolve(path);
            HttpRequest request = HttpRequest.newBuilder(uri).timeout(timeout)
                    .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofByteArray(json))
                    .build();
            try {
                HttpResponse<java.io.InputStream> response = http.send(request, HttpResponse.BodyHandlers.ofInputStream());
                preferred = index;
                byte[] answer;
                try (java.io.InputStream in = response.body()) {
                    answer = in.readNBytes(MAX_RESPONSE + 1); // never more than the limit, whatever is sent
                }
                if (answer.length > MAX_RESPONSE) {
                    throw new DynamoProtocolException("etcd answered " + path + " with more than " + MAX_RESPONSE
                            + " bytes");
                }
                Object document = answer.length == 0 ? null : JsonValues.parse(answer, MAX_RESPONSE);
                if (!(document instanceof Map<?, ?> map)) {
                    throw new DynamoProtocolException("etcd answered " + path + " with HTTP " + response.statusCode()
                            + " and no JSON object");
                }
                if (response.statusCode() != 200 || map.containsKey("error") && !map.containsKey("result")) {
                    Object message = map.containsKey("message") ? map.get("message") : map.get("error");
                    throw new EtcdException(path, response.statusCode(), String.valueOf(message));
                }
                return map;
            } catch (IOException e) {
                last = e;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new DynamoDiscoveryException("interrupted calling etcd " + path, e);
            }
        }
        throw new DynamoDiscoveryException("etcd is unreachable at " + endpoints + " (" + path + "): " + last, last);
    }

    /** etcd answered with an error. */
    public static final class EtcdException extends DynamoDiscoveryException {
        private static final long serialVersionUID = 1L;
        private final String etcdMessage;

        EtcdException(String path, int status, String message) {
            super("etcd refused " + path + " (HTTP " + status + "): " + message, null);
            this.etcdMessage = message;
        }

        public String etcdMessage() {
            return etcdMessage;
        }
    }

    public Range range(String prefix) {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("key", b64(prefix));
        body.put("range_end", b64(prefixEnd(prefix)));
        return parseRange(call("/v3/kv/range", body));
    }

    /** A {@code /v3/kv/range} answer, as the gateway writes it (base64 keys and values, numbers as strings). */
    public static Range parseRange(Map<?, ?> answer) {
        List<KeyValue> kvs = new ArrayList<>();
        Object list = answer.get("kvs");
        if (list instanceof List<?> entries) {
            for (Object entry : entries) {
                kvs.add(keyValue(entry));
            }
        } else if (list != null) {
            throw new DynamoProtocolException("etcd's range answer has kvs that is not a list");
        }
        return new Range(kvs, revision(answer.get("header")));
    }

    /** Puts {@code key} with {@code lease} only if it does not exist; whether it was created. */
    public boolean createIfAbsent(String key, byte[] value, long lease) {
        Map<String, Object> compare = new LinkedHashMap<>();
        compare.put("key", b64(key));
        compare.put("result", "EQUAL");
        compare.put("target", "VERSION");
        compare.put("version", "0");
        Map<String, Object> put = new LinkedHashMap<>();
        put.put("key", b64(key));
        put.put("value", b64(value));
        put.put("lease", Long.toUnsignedString(lease));
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("compare", List.of(compare));
        body.put("success", List.of(Map.of("request_put", put)));
        Map<?, ?> answer = call("/v3/kv/txn", body);
        return Boolean.TRUE.equals(answer.get("succeeded"));
    }

    public void delete(String key) {
        call("/v3/kv/deleterange", Map.of("key", b64(key)));
    }

    /** Grants a lease; its id. */
    public long grant(Duration ttl) {
        Map<?, ?> answer = call("/v3/lease/grant", Map.of("TTL", String.valueOf(ttl.toSeconds())));
        return number(answer.get("ID"), "lease grant ID");
    }

    /** Renews a lease; its remaining TTL in seconds, 0 or less when it is gone. */
    public long keepAlive(long lease) {
        Map<?, ?> answer = call("/v3/lease/keepalive", Map.of("ID", Long.toUnsignedString(lease)));
        Object result = answer.get("result");
        if (!(result instanceof Map<?, ?> fields)) {
            throw new DynamoProtocolException("etcd's keep-alive answer has no result");
        }
        Object ttl = fields.get("TTL");
        return ttl == null ? 0 : number(ttl, "keep-alive TTL");
    }

    public void revoke(long lease) {
        call("/v3/lease/revoke", Map.of("ID", Long.toUnsignedString(lease)));
    }

    /** A watch in progress; {@link #close()} ends it promptly from any thread. */
    public interface WatchHandle extends AutoCloseable {
        @Override
        void close();
    }

    /** Watches every key with {@code prefix} from {@code startRevision} on. */
    public WatchHandle watch(String prefix, long startRevision, WatchListener listener) {
        Map<String, Object> create = new LinkedHashMap<>();
        create.put("key", b64(prefix));
        create.put("range_end", b64(prefixEnd(prefix)));
        create.put("start_revision", String.valueOf(startRevision));
        byte[] json = JsonValues.write(Map.of("create_request", create));
        URI uri = endpoints.get(preferred).resolve("/v3/watch");
        HttpRequest request = HttpRequest.newBuilder(uri).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofByteArray(json)).build();
        LineSubscriber lines = new LineSubscriber(listener);
        CompletableFuture<HttpResponse<Void>> response = http.sendAsync(request,
                info -> HttpResponse.BodySubscribers.fromSubscriber(lines));
        response.whenComplete((done, failure) -> lines.finish(failure));
        return () -> {
            lines.cancel();
            response.cancel(true);
        };
    }

    /** Splits the watch stream into lines (each bounded), parses each, and hands its events on. */
    private static final class LineSubscriber implements Flow.Subscriber<List<ByteBuffer>> {
        private final WatchListener listener;
        private final AtomicReference<Flow.@Nullable Subscription> subscription = new AtomicReference<>();
        private final java.io.ByteArrayOutputStream line = new java.io.ByteArrayOutputStream();
        private volatile boolean ended;
        private volatile boolean cancelled;

        LineSubscriber(WatchListener listener) {
            this.listener = listener;
        }

        @Override
        public void onSubscribe(Flow.Subscription s) {
            subscription.set(s);
            if (cancelled) {
                s.cancel();
            } else {
                s.request(1);
            }
        }

        @Override
        public void onNext(List<ByteBuffer> buffers) {
            try {
                for (ByteBuffer buffer : buffers) {
                    while (buffer.hasRemaining()) {
                        byte b = buffer.get();
                        if (b == '\n') {
                            handle(line.toByteArray());
                            line.reset();
                        } else {
                            if (line.size() >= MAX_WATCH_LINE) {
                                throw new DynamoProtocolException("an etcd watch line is longer than " + MAX_WATCH_LINE
                                        + " bytes");
                            }
                            line.write(b);
                        }
                    }
                }
            } catch (RuntimeException e) {
                cancel();
                end(e);
                return;
            }
            Flow.Subscription s = subscription.get();
            if (s != null && !cancelled) {
                s.request(1);
            }
        }

        private void handle(byte[] bytes) {
            if (bytes.length == 0 || ended) {
                return;
            }
            Object document = JsonValues.parse(bytes, MAX_WATCH_LINE);
            if (!(document instanceof Map<?, ?> map)) {
                throw new DynamoProtocolException("an etcd watch line is not a JSON object");
            }
            Object result = map.get("result");
            if (!(result instanceof Map<?, ?> fields)) {
                throw new DynamoProtocolException("the etcd watch ended with " + (map.containsKey("error")
                        ? map.get("error") : "a line without result"));
            }
            if (Boolean.TRUE.equals(fields.get("canceled")) || fields.containsKey("compact_revision")
                    && !"0".equals(String.valueOf(fields.get("compact_revision")))) {
                throw new DynamoProtocolException("the etcd watch was cancelled by the server ("
                        + fields.get("cancel_reason") + ", compact_revision " + fields.get("compact_revision") + ")");
            }
            long revision = revision(fields.get("header"));
            Object events = fields.get("events");
            if (events == null) {
                return; // the creation notice, or progress
            }
            if (!(events instanceof List<?> list)) {
                throw new DynamoProtocolException("an etcd watch line's events are not a list");
            }
            List<Event> parsed = new ArrayList<>(list.size());
            for (Object event : list) {
                if (!(event instanceof Map<?, ?> eventMap)) {
                    throw new DynamoProtocolException("an etcd watch event is not an object");
                }
                boolean delete = "DELETE".equals(eventMap.get("type"));
                parsed.add(new Event(delete, keyValue(eventMap.get("kv"))));
            }
            listener.events(parsed, revision);
        }

        @Override
        public void onError(Throwable throwable) {
            end(throwable);
        }

        @Override
        public void onComplete() {
            end(null);
        }

        void finish(@Nullable Throwable failure) {
            end(failure);
        }

        private void end(@Nullable Throwable cause) {
            if (!ended) {
                ended = true;
                if (!cancelled) {
                    listener.ended(cause);
                }
            }
        }

        void cancel() {
            cancelled = true;
            Flow.Subscription s = subscription.get();
            if (s != null) {
                s.cancel();
            }
        }
    }

    private static KeyValue keyValue(@Nullable Object entry) {
        if (!(entry instanceof Map<?, ?> kv)) {
            throw new DynamoProtocolException("an etcd key-value is not an object");
        }
        Object key = kv.get("key");
        if (!(key instanceof String keyText)) {
            throw new DynamoProtocolException("an etcd key-value has no key");
        }
        Object value = kv.get("value");
        byte[] bytes;
        try {
            bytes = value == null ? new byte[0] : Base64.getDecoder().decode(String.valueOf(value));
            return new KeyValue(new String(Base64.getDecoder().decode(keyText), StandardCharsets.UTF_8), bytes,
                    kv.get("mod_revision") == null ? 0 : number(kv.get("mod_revision"), "mod_revision"),
                    kv.get("lease") == null ? 0 : number(kv.get("lease"), "lease"));
        } catch (IllegalArgumentException e) {
            throw new DynamoProtocolException("an etcd key-value is not base64: " + e.getMessage());
        }
    }

    private static long revision(@Nullable Object header) {
        if (header instanceof Map<?, ?> fields && fields.get("revision") != null) {
            return number(fields.get("revision"), "revision");
        }
        return 0;
    }

    private static long number(@Nullable Object value, String what) {
        try {
            if (value instanceof Long number) {
                return number;
            }
            return Long.parseUnsignedLong(String.valueOf(value));
        } catch (NumberFormatException e) {
            throw new DynamoProtocolException("etcd's " + what + " is not a number: " + value);
        }
    }

    @Override
    public void close() {
        executor.shutdownNow();
    }
}
