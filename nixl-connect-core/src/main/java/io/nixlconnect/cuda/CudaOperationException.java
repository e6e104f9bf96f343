package io.nixlconnect.cuda;

import io.nixlconnect.NixlConnectException;

/** A CUDA driver call failed on a machine where CUDA is otherwise available. */
public class CudaOperationException extends NixlConnectException {

    private static final long serialVersionUID = 1L;

    private final String operation;
    private final String errorName;

    public CudaOperationException(String operation, String errorName) {
        super(operation + " failed: " + errorName);
        this.operation = operation;
        this.errorName = errorName;
    }

    /** The driver call that failed, e.g. {@code cuMemAlloc(device 0, 1048576 bytes)}. */
    public String operation() {
        return operation;
    }

    /** The driver's name for the error, e.g. {@code CUDA_ERROR_OUT_OF_MEMORY}. */
    public String errorName() {
        return errorName;
    }
}
