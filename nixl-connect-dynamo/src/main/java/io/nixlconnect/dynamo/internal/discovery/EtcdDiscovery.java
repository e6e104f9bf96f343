package io.nixlconnect.dynamo.internal.discovery;

import io.nixlconnect.dynamo.DynamoDiscoveryException;
import io.nixlconnect.dynamo.DynamoException;
import io.nixlconnect.dynamo.DynamoInstance;
import io.nixlconnect.dynamo.EndpointId;
import io.nixlconnect.dynamo.internal.Counters;
import io.nixlconnect.dynamo.internal.Threads;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
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
 * Dynamo's etcd discovery ({@code DYN_DISCOVERY_BACKEND=etcd}): records under {@code v1/instances/…}, each created only
 * if absent and attached to this runtime's lease, whose id is the instance id; the lease is kept alive every third of
 * its TTL, so the records vanish that long after this process stops. Followers list the endpoint's prefix and watch
 * it from the listed revision; a watch that ends (etcd restarted, history compacted) is listed and watched again.
 */
public final class EtcdDiscovery implements Discovery {

    private static final Logger LOG = LoggerFactory.getLogger(EtcdDiscovery.class);
    private static final long RETRY_MILLIS = 1000;

    private final EtcdGateway etcd;
    private final Duration leaseTtl;
    private final Counters counters;
    private final ScheduledExecutorService scheduler;
    private final List<EtcdRegistration> registrations = new CopyOnWriteArrayList<>();
    private final List<LongConsumer> idListeners = new CopyOnWriteArrayList<>();
    private final List<EtcdWatch> watches = new CopyOnWriteArrayList<>();
    private long lease;
    private @Nullable ScheduledFuture<?> keepAlive;
    private volatile boolean healthy = true;
    private volatile boolean closed;

    public EtcdDiscovery(List<URI> endpoints, Duration leaseTtl, Duration requestTimeout, Counters counters) {
        this.etcd = new EtcdGateway(endpoints, requestTimeout);
        this.leaseTtl = leaseTtl;
        this.counters = counters;
        this.scheduler = Threads.scheduler("dynamo-etcd-discovery");
    }

    @Override
    public boolean healthy() {
        return healthy && !closed;
    }

    // ---- the lease ----

    @Override
    public synchronized long instanceId() {
        if (closed) {
            throw new DynamoException("the runtime is closed");
        }
        if (lease == 0) {
            lease = grant();
            long every = Math.max(500, leaseTtl.toMillis() / 3);
            keepAlive = scheduler.scheduleWithFixedDelay(this::keepLeaseAlive, every, every, TimeUnit.MILLISECONDS);
        }
        return lease;
    }

    private long grant() {
        try {
            long id = etcd.grant(leaseTtl);
            healthy = true;
            return id;
        } catch (DynamoException e) {
            healthy = false;
            counters.discoveryErrors.increment();
            throw e instanceof DynamoDiscoveryException ? e : new DynamoDiscoveryException(e.getMessage(), e);
        }
    }

    private void keepLeaseAlive() {
        long current;
        synchronized (this) {
            current = lease;
        }
        if (closed || current == 0) {
            return;
        }
        try {
            long ttl = etcd.keepAlive(current);
            if (ttl > 0) {
                healthy = true;
                return;
            }
            LOG.warn("the etcd lease {} of this runtime is gone; registering again under a new one",
                    Long.toHexString(current));
        } catch (DynamoException e) {
            healthy = false;
            counters.discoveryErrors.increment();
            LOG.warn("keeping the etcd lease {} alive failed: {}", Long.toHexString(current), e.getMessage());
            return; // try again next time; the lease may still be alive
        }
        counters.discoveryErrors.increment();
        healthy = false;
        long replacement;
        try {
            replacement = grant();
        } catch (DynamoException e) {
            return;
        }
        synchronized (this) {
            if (closed) {
                return;
            }
            lease = replacement;
        }
        for (LongConsumer listener : idListeners) {
            listener.accept(replacement);
        }
        for (EtcdRegistration registration : registrations) {
            registration.publish(replacement);
        }
    }

    @Override
    public void onInstanceIdChange(LongConsumer listener) {
        idListeners.add(listener);
    }

    // ---- registering ----

    private final class EtcdRegistration implements Registration {
        private final EndpointId endpoint;
        private final LongFunction<DynamoInstance> recordFor;
        private volatile @Nullable String key;

        EtcdRegistration(EndpointId endpoint, LongFunction<DynamoInstance> recordFor) {
            this.endpoint = endpoint;
            this.recordFor = recordFor;
        }

        void publish(long id) {
            DynamoInstance instance = recordFor.apply(id);
            String newKey = InstanceRecord.key(endpoint, id);
            try {
                if (!etcd.createIfAbsent(newKey, InstanceRecord.write(instance), id)) {
                    throw new DynamoDiscoveryException("the etcd key " + newKey + " already exists: another runtime"
                            + " registered this instance id", null);
                }
                key = newKey;
            } catch (DynamoException e) {
                healthy = false;
                counters.discoveryErrors.increment();
                throw e instanceof DynamoDiscoveryException ? e
                        : new DynamoDiscoveryException("cannot register " + endpoint + " in etcd: " + e.getMessage(), e);
            }
        }

        @Override
        public void close() {
            registrations.remove(this);
            String current = key;
            if (current != null && !closed) {
                try {
                    etcd.delete(current);
                } catch (DynamoException e) {
                    LOG.warn("cannot delete the etcd key {} (it goes with the lease): {}", current, e.getMessage());
                }
            }
        }
    }

    @Override
    public Registration register(EndpointId endpoint, LongFunction<DynamoInstance> recordFor) {
        long id = instanceId();
        EtcdRegistration registration = new EtcdRegistration(endpoint, recordFor);
        registration.publish(id);
        registrations.add(registration);
        return registration;
    }

    // ---- watching ----

    private final class EtcdWatch implements Watch, EtcdGateway.WatchListener {
        private final EndpointId endpoint;
        private final String prefix;
        private final Listener listener;
        private final Map<String, DynamoInstance> byKey = new LinkedHashMap<>();
        private volatile List<DynamoInstance> instances = List.of();
        private volatile EtcdGateway.@Nullable WatchHandle handle;
        private volatile boolean stopped;

        EtcdWatch(EndpointId endpoint, Listener listener) {
            this.endpoint = endpoint;
            this.prefix = InstanceRecord.endpointPrefix(endpoint);
            this.listener = listener;
        }

        /** Lists the prefix and watches it from there; on failure, tries again later. */
        void start() {
            if (stopped || closed) {
                return;
            }
            EtcdGateway.Range range;
            try {
                range = etcd.range(prefix);
                healthy = true;
            } catch (DynamoException e) {
                healthy = false;
                counters.discoveryErrors.increment();
                LOG.warn("cannot list {} in etcd: {}; trying again", endpoint, e.getMessage());
                retry();
                return;
            }
            synchronized (this) {
                byKey.clear();
                for (EtcdGateway.KeyValue kv : range.kvs()) {
                    put(kv);
                }
                publish();
            }
            try {
                handle = etcd.watch(prefix, range.revision() + 1, this);
                if (stopped) {
                    EtcdGateway.WatchHandle started = handle;
                    if (started != null) {
                        started.close();
                    }
                }
            } catch (RuntimeException e) {
                counters.discoveryErrors.increment();
                retry();
            }
        }

        private void retry() {
            if (!stopped && !closed) {
                try {
                    scheduler.schedule(this::start, RETRY_MILLIS, TimeUnit.MILLISECONDS);
                } catch (java.util.concurrent.RejectedExecutionException e) {
                    // closing
                }
            }
        }

        private void put(EtcdGateway.KeyValue kv) {
            try {
                DynamoInstance instance = InstanceRecord.parse(kv.value());
                if (!instance.endpoint().equals(endpoint)
                        || !kv.key().equals(InstanceRecord.key(endpoint, instance.instanceId()))) {
                    throw new io.nixlconnect.dynamo.DynamoProtocolException("the record under " + kv.key()
                            + " describes another instance (" + instance.endpoint() + " " + instance.instanceIdHex() + ")");
                }
                byKey.put(kv.key(), instance);
            } catch (DynamoException e) {
                byKey.remove(kv.key());
                counters.discoveryEntriesRejected.increment();
                LOG.warn("etcd discovery record {} is refused: {}", kv.key(), e.getMessage());
            }
        }

        private void publish() {
            List<DynamoInstance> now = new ArrayList<>(byKey.values());
            now.sort(Comparator.comparing(DynamoInstance::instanceId, Long::compareUnsigned));
            List<DynamoInstance> snapshot = List.copyOf(now);
            if (!snapshot.equals(instances)) {
                instances = snapshot;
                try {
                    listener.instancesChanged(snapshot);
                } catch (RuntimeException e) {
                    LOG.warn("a discovery listener of {} failed", endpoint, e);
                }
            }
        }

        @Override
        public synchronized void events(List<EtcdGateway.Event> events, long revision) {
            for (EtcdGateway.Event event : events) {
                if (event.delete()) {
                    byKey.remove(event.kv().key());
                } else {
                    put(event.kv());
                }
            }
            publish();
        }

        @Override
        public void ended(@Nullable Throwable cause) {
            if (stopped || closed) {
                return;
            }
            counters.discoveryErrors.increment();
            LOG.warn("the etcd watch of {} ended ({}); listing and watching again", endpoint,
                    cause == null ? "the server closed it" : cause.toString());
            retry();
        }

        @Override
        public List<DynamoInstance> instances() {
            return instances;
        }

        @Override
        public void close() {
            stopped = true;
            watches.remove(this);
            EtcdGateway.WatchHandle current = handle;
            if (current != null) {
                current.close();
            }
        }
    }

    @Override
    public Watch watch(EndpointId endpoint, Listener listener) {
        if (closed) {
            throw new DynamoException("the runtime is closed");
        }
        EtcdWatch watch = new EtcdWatch(endpoint, listener);
        watches.add(watch);
        watch.start();
        return watch;
    }

    @Override
    public void close() {
        long current;
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            current = lease;
            if (keepAlive != null) {
                keepAlive.cancel(false);
            }
        }
        for (EtcdWatch watch : watches) {
            watch.close();
        }
        for (EtcdRegistration registration : registrations) {
            String key = registration.key;
            if (key != null) {
                try {
                    etcd.delete(key);
                } catch (DynamoException e) {
                    // revoking the lease below removes it as well
                }
            }
        }
        registrations.clear();
        if (current != 0) {
            try {
                etcd.revoke(current);
            } catch (DynamoException e) {
                LOG.warn("cannot revoke the etcd lease {} (its records vanish when it expires): {}",
                        Long.toHexString(current), e.getMessage());
            }
        }
        scheduler.shutdownNow();
        etcd.close();
    }

    @Override
    public String toString() {
        return "etcd discovery";
    }
}
