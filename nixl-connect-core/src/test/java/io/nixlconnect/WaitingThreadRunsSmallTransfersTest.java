package io.nixlconnect;

import static org.assertj.core.api.Assertions.assertThat;

import io.nixlconnect.transport.TransferHandle;
import io.nixlconnect.transport.Transport;
import io.nixlconnect.transport.TransportAgent;
import io.nixlconnect.transport.TransportSettings;
import io.nixlconnect.transport.embedded.EmbeddedSettings;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
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
 * to count the offers and to see which thread ended each transfer.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class WaitingThreadRunsSmallTransfersTest {

    private static final Duration WAIT = Duration.ofSeconds(20);

    private final AtomicInteger offers = new AtomicInteger();
    /** The thread that completed each transfer, in order. */
    private final List<Thread> completedOn = new CopyOnWriteArrayList<>();
    private Connector producer;
    private Connector consumer;

    @BeforeEach
    void start() {
        EmbeddedSettings tcp = EmbeddedSettings.defaults().withSameHostCopy(false);
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
                handle.completion().whenComplete((ignored, error) -> completedOn.add(Thread.currentThread()));
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
        // A worker may claim one before the caller reaches its wait, but not all of them.
        assertThat(completedOn).contains(Thread.currentThread());
    }

    @Test
    void theEmbeddedTransportLeavesALargeReadToItsWorkers() {
        int limit = 64 * 1024; // EmbeddedTransfer.RUN_ON_WAITING_THREAD_MAX_BYTES
        read(limit + 1, false);
        read(limit + 1, false);
        assertThat(offers).hasValue(2);
        assertThat(completedOn).hasSize(2).doesNotContain(Thread.currentThread());
    }

    @Test
    void aTimedWaitDoesNotOfferEvenASmallRead() {
        read(4096, true);
        assertThat(offers).hasValue(0);
        assertThat(completedOn).hasSize(1).doesNotContain(Thread.currentThread());
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
}
