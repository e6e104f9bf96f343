package io.nixlconnect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.nixlconnect.transport.TransferHandle;
import io.nixlconnect.transport.Transport;
import io.nixlconnect.transport.TransportAgent;
import io.nixlconnect.transport.TransportSettings;
import io.nixlconnect.transport.embedded.EmbeddedSettings;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * An untimed wait offers the transfer to the waiting thread ({@link TransferHandle#runOnWaitingThread()}); one waited
 * for with a timeout, or by an interrupted thread, is left to the transport's threads (the caller keeps control of its
 * deadline). The embedded transport takes a small transfer no worker has started yet and leaves a larger one to its
 * workers (an interrupt cannot close the connection of a long transfer). The consumer's embedded transport is wrapped
 * to count the offers and to see which thread ended each transfer. {@link Connector#read} and {@link Connector#write}
 * post for a caller that waits: the embedded transport then wakes no worker for a small transfer at all.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class WaitingThreadRunsSmallTransfersTest {

    private static final Duration WAIT = Duration.ofSeconds(20);

    private final AtomicInteger offers = new AtomicInteger();
    /** Offers after which the transfer, in progress before, had ended: the waiting thread ran it. */
    private final AtomicInteger ranOnWaitingThread = new AtomicInteger();
    /** Offers after which the transfer was still in progress: the transport left it to its own threads. */
    private final AtomicInteger leftToTransportThreads = new AtomicInteger();
    private Connector producer;
    private Connector consumer;

    @BeforeEach
    void start() {
        // One connection per peer: a transfer that kept its connection would leave the next one waiting for good.
        EmbeddedSettings tcp = EmbeddedSettings.defaults().withSameHostCopy(false).withMaxConnectionsPerPeer(1);
        producer = new Connector(ConnectorOptions.builder().transports(tcp).workerId("waiting-producer").build());
        TransportSettings counting = new TransportSettings() {
            @Override
            public String name() {
                return "embedded";
            }

            @Override
            public Transport open() {
                return wrap(Transport.class, tcp.open());
            }
        };
        consumer = new Connector(ConnectorOptions.builder().transports(counting).workerId("waiting-consumer").build());
    }

    /** A proxy of {@code target} that wraps the agents and transfer handles it returns, counting offers. */
    @SuppressWarnings("unchecked")
    private <T> T wrap(Class<T> type, T target) {
        InvocationHandler handler = (proxy, method, args) -> {
            if (method.getName().equals("runOnWaitingThread")) {
                offers.incrementAndGet();
                TransferHandle handle = (TransferHandle) target;
                boolean endedBefore = handle.state().isTerminal();
                handle.runOnWaitingThread();
                if (!handle.state().isTerminal()) {
                    leftToTransportThreads.incrementAndGet();
                } else if (!endedBefore) {
                    ranOnWaitingThread.incrementAndGet();
                }
                return null;
            }
            Object result;
            try {
                result = method.invoke(target, args);
            } catch (InvocationTargetException e) {
                throw e.getCause();
            }
            if (result instanceof TransportAgent agent && method.getReturnType() == TransportAgent.class) {
                return wrap(TransportAgent.class, agent);
            }
            if (result instanceof TransferHandle handle && method.getReturnType() == TransferHandle.class) {
                return wrap(TransferHandle.class, handle);
            }
            return result;
        };
        return (T) Proxy.newProxyInstance(type.getClassLoader(), new Class<?>[] {type}, handler);
    }

    @AfterEach
    void stop() {
        consumer.close();
        producer.close();
    }

    private void read(int size, boolean timed) {
        byte[] content = TestData.random(size);
        try (Descriptor source = new Descriptor(content); Descriptor target = Descriptor.allocate(size)) {
            ReadableOperation readable = producer.createReadable(source);
            ReadOperation read = consumer.beginRead(readable.metadata(), target);
            if (timed) {
                read.waitForCompletion(WAIT);
            } else {
                read.waitForCompletion();
            }
            readable.waitForCompletion(WAIT);
            assertThat(read.status()).isEqualTo(OperationStatus.COMPLETE);
            assertThat(target.toByteArray()).isEqualTo(content);
        }
    }

    @Test
    void anUntimedWaitOffersTheTransferToTheWaitingThreadWhichRunsASmallOne() {
        for (int i = 0; i < 50; i++) {
            read(4096, false);
        }
        assertThat(offers).hasValue(50);
        // A worker may claim one before the caller reaches its wait (how often depends on the machine's load); an
        // offer that did nothing would almost never see the transfer end within the offer itself.
        assertThat(ranOnWaitingThread).hasPositiveValue();
    }

    /** Large enough that no worker can have moved it between the post and the offer. */
    @Test
    void theEmbeddedTransportLeavesALargeReadToItsWorkers() {
        read(64 << 20, false);
        assertThat(offers).hasValue(1);
        assertThat(leftToTransportThreads).hasValue(1);
    }

    @Test
    void aTimedWaitDoesNotOfferEvenASmallRead() {
        read(4096, true);
        assertThat(offers).hasValue(0);
    }

    @Test
    void anInterruptedThreadDoesNotTakeTheTransfer() {
        byte[] content = TestData.random(4096);
        try (Descriptor source = new Descriptor(content); Descriptor target = Descriptor.allocate(4096)) {
            ReadableOperation readable = producer.createReadable(source);
            ReadOperation read = consumer.beginRead(readable.metadata(), target);
            Thread.currentThread().interrupt();
            try {
                read.waitForCompletion();
            } catch (TransferException expected) {
                // interrupted while waiting: the read goes on
            } finally {
                Thread.interrupted();
            }
            assertThat(offers).hasValue(0);
            read.waitForCompletion(WAIT);
            readable.waitForCompletion(WAIT);
            assertThat(target.toByteArray()).isEqualTo(content);
        }
    }

    @Test
    void blockingReadsAndWritesRunEverySmallTransferOnTheCallingThread() {
        for (int i = 0; i < 25; i++) {
            byte[] content = TestData.random(4096);
            try (Descriptor source = new Descriptor(content); Descriptor target = Descriptor.allocate(4096)) {
                ReadableOperation readable = producer.createReadable(source);
                consumer.read(readable.metadata(), target);
                assertThat(target.toByteArray()).isEqualTo(content);
                readable.waitForCompletion(WAIT);
            }
            try (Descriptor source = new Descriptor(content); Descriptor target = Descriptor.allocate(4096)) {
                WritableOperation writable = producer.createWritable(target);
                consumer.write(source, writable.metadata());
                writable.waitForCompletion(WAIT);
                assertThat(target.toByteArray()).isEqualTo(content);
            }
        }
        // No worker was handed any of them, so none can have started one before the offer: every one ran there.
        assertThat(offers).hasValue(50);
        assertThat(ranOnWaitingThread).hasValue(50);
        assertThat(consumer.inFlightOperations()).isZero();
    }

    @Test
    void aBlockingReadLeavesALargeTransferToTheWorkers() {
        byte[] content = TestData.random(64 << 20);
        try (Descriptor source = new Descriptor(content); Descriptor target = Descriptor.allocate(content.length)) {
            ReadableOperation readable = producer.createReadable(source);
            consumer.read(readable.metadata(), target);
            assertThat(target.toByteArray()).isEqualTo(content);
        }
        assertThat(offers).hasValue(1);
        assertThat(leftToTransportThreads).hasValue(1);
    }

    @Test
    void aBlockingReadOnAnInterruptedThreadIsCancelledAndGivesItsConnectionBack() {
        byte[] content = TestData.random(4096);
        try (Descriptor source = new Descriptor(content); Descriptor target = Descriptor.allocate(4096)) {
            ReadableOperation readable = producer.createReadable(source);
            Thread.currentThread().interrupt();
            try {
                assertThatThrownBy(() -> consumer.read(readable.metadata(), target))
                        .isInstanceOf(TransferException.class)
                        .extracting(e -> ((TransferException) e).status()).isEqualTo(OperationStatus.CANCELLED);
                assertThat(Thread.currentThread().isInterrupted()).as("the interrupt is kept").isTrue();
            } finally {
                Thread.interrupted();
            }
            assertThat(offers).hasValue(0);
            assertThat(consumer.inFlightOperations()).isZero();
            // The cancelled read was posted, so its peer is told (issue 25's failure report) and ends at once.
            await().atMost(WAIT).until(() -> readable.status() == OperationStatus.ERRORED);
            // The cancelled read held the one connection (permit) to the producer: the next read needs it back.
            ReadableOperation retry = producer.createReadable(source);
            consumer.read(retry.metadata(), target);
            retry.waitForCompletion(WAIT);
            assertThat(target.toByteArray()).isEqualTo(content);
        }
    }
}
