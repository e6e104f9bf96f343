package io.nixlconnect.cuda;

/**
 * Whether CUDA can be used here, and if not, why.
 *
 * @param available   whether at least one CUDA device can be used
 * @param reason      why CUDA is unavailable, or a short summary ("2 CUDA device(s)") when it is available
 * @param deviceCount how many devices the driver reports; 0 when unavailable
 */
public record CudaAvailability(boolean available, String reason, int deviceCount) {

    static CudaAvailability unavailable(String reason) {
        return new CudaAvailability(false, reason, 0);
    }

    static CudaAvailability withDevices(int deviceCount) {
        return new CudaAvailability(true, deviceCount + " CUDA device(s)", deviceCount);
    }
}
