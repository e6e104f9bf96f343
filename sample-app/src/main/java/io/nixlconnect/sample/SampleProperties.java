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

    /** The roles a sample process can play. */
    public enum Role {
        /** Publishes a tensor and accepts writes; serves until stopped. */
        PRODUCER,
        /** Reads the producer's tensor and writes one into it, then reports (and exits). */
        CONSUMER,
        /** Both in one process, against each other over HTTP and the transport, each with a connector of its own. */
        BOTH
    }
}
