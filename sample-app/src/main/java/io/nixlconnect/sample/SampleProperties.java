package io.nixlconnect.sample;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.util.unit.DataSize;

/** Settings of the sample, bound from {@code sample.*}. */
@ConfigurationProperties("sample")
public class SampleProperties {

    /** Which role this process plays: producer, consumer, or both against each other (the demo). */
    private Role role = Role.BOTH;

    /** Memory the tensors live in: 'auto' (the GPU when one is usable, else host memory), 'cpu' or 'cuda'. */
    private String device = "auto";

    /** Name of the tensor the producer publishes and the consumer reads. */
    private String tensorName = "demo";

    /** Size of the tensor the producer publishes and of the one the consumer writes. */
    private DataSize tensorSize = DataSize.ofMegabytes(256);

    /** Largest buffer a peer may ask the producer to make writable (POST /tensors/{name}/writable). */
    private DataSize maxWritableSize = DataSize.ofGigabytes(1);

    /** Base URL of the producer's HTTP API. Unset: this process (role 'both'). */
    private String producerUrl;

    /** Whether a consumer runs the demo flow (read, write, verify, report) once the application has started. */
    private boolean runDemo = true;

    /** Whether the application exits once the demo has run (exit code 0 when every check passed, 1 otherwise). */
    private boolean exitAfterDemo = true;

    /** The Dynamo modes: a caller or an encode worker in a Dynamo deployment instead of the HTTP demo. */
    private final Dynamo dynamo = new Dynamo();

    public Role getRole() {
        return role;
    }

    public void setRole(Role role) {
        this.role = role;
    }

    public String getDevice() {
        return device;
    }

    public void setDevice(String device) {
        this.device = device;
    }

    public String getTensorName() {
        return tensorName;
    }

    public void setTensorName(String tensorName) {
        this.tensorName = tensorName;
    }

    public DataSize getTensorSize() {
        return tensorSize;
    }

    public void setTensorSize(DataSize tensorSize) {
        this.tensorSize = tensorSize;
    }

    public DataSize getMaxWritableSize() {
        return maxWritableSize;
    }

    public void setMaxWritableSize(DataSize maxWritableSize) {
        this.maxWritableSize = maxWritableSize;
    }

    public String getProducerUrl() {
        return producerUrl;
    }

    public void setProducerUrl(String producerUrl) {
        this.producerUrl = producerUrl;
    }

    public boolean isRunDemo() {
        return runDemo;
    }

    public void setRunDemo(boolean runDemo) {
        this.runDemo = runDemo;
    }

    public boolean isExitAfterDemo() {
        return exitAfterDemo;
    }

    public void setExitAfterDemo(boolean exitAfterDemo) {
        this.exitAfterDemo = exitAfterDemo;
    }

    public Dynamo getDynamo() {
        return dynamo;
    }

    /**
     * {@code sample.dynamo.*}: setting {@code call} or {@code serve} makes this process a member of a Dynamo
     * deployment (role {@code dynamo}, no web server, {@code nixl.connect.dynamo.enabled=true}, backend {@code auto}:
     * {@link DynamoMode}), configured by the {@code DYN_*} environment as a Python worker is.
     */
    public static class Dynamo {

        /** Endpoint to call, {@code ns.comp.ep}: sends {"request": i} to it, reads each reply's tensor, exits. */
        private String call;

        /** Endpoint to serve, {@code ns.comp.ep}: answers requests with a fresh tensor each, then exits. */
        private String serve;

        /** Requests to send (call) or to answer before exiting (serve). At least 1. */
        private int requests = 1;

        /** Size of each tensor served, in bytes ({@code 16MB} also works). */
        private DataSize bytes = DataSize.ofMegabytes(1);

        /** Longest wait for an instance to appear, a reply, or a tensor's reader. */
        private java.time.Duration timeout = java.time.Duration.ofSeconds(60);

        public String getCall() {
            return call;
        }

        public void setCall(String call) {
            this.call = call;
        }

        public String getServe() {
            return serve;
        }

        public void setServe(String serve) {
            this.serve = serve;
        }

        public int getRequests() {
            return requests;
        }

        public void setRequests(int requests) {
            this.requests = requests;
        }

        public DataSize getBytes() {
            return bytes;
        }

        public void setBytes(DataSize bytes) {
            this.bytes = bytes;
        }

        public java.time.Duration getTimeout() {
            return timeout;
        }

        public void setTimeout(java.time.Duration timeout) {
            this.timeout = timeout;
        }
    }

    /** The roles a sample process can play. */
    public enum Role {
        /** Publishes a tensor and accepts writes; serves until stopped. */
        PRODUCER,
        /** Reads the producer's tensor and writes one into it, then reports (and exits). */
        CONSUMER,
        /** Both in one process, against each other over HTTP and the transport, each with a connector of its own. */
        BOTH,
        /** A Dynamo caller or worker ({@code sample.dynamo.call} / {@code serve} set it): no HTTP demo. */
        DYNAMO
    }
}
