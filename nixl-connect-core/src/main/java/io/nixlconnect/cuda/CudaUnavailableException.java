package io.nixlconnect.cuda;

import io.nixlconnect.NixlConnectException;
import org.jspecify.annotations.Nullable;

/**
 * CUDA cannot be used in this process, or not for the device asked for. {@link #reason()} names the
 * cause in words: JCuda missing from the classpath, no NVIDIA driver ({@code libcuda}), no CUDA
 * device, or a device id that does not exist.
 */
public class CudaUnavailableException extends NixlConnectException {

    private static final long serialVersionUID = 1L;

    private final String reason;

    public CudaUnavailableException(String reason) {
        this(reason, null);
    }

    public CudaUnavailableException(String reason, @Nullable Throwable cause) {
        super("CUDA is unavailable: " + reason, cause);
        this.reason = reason;
    }

    /** The cause in words, without the "CUDA is unavailable" prefix. */
    public String reason() {
        return reason;
    }
}
