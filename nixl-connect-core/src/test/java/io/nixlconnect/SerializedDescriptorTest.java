package io.nixlconnect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class SerializedDescriptorTest {

    private static InvalidMetadataException refused(String device, long ptr, long size) {
        InvalidMetadataException e = catchThrowableOfType(InvalidMetadataException.class,
                () -> new SerializedDescriptor(device, ptr, size));
        assertThat(e).as("refused: %s %d %d", device, ptr, size).isNotNull();
        return e;
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "cpu|cpu|cpu", "CPU|cpu|cpu", "' cpu '|cpu|cpu", "cuda|cuda|cuda:0", "' CUDA '|cuda|cuda:0",
        "cuda:3|cuda:3|cuda:3", "' CUDA:3 '|cuda:3|cuda:3", "Cuda:12|cuda:12|cuda:12", "cpu:0|cpu:0|cpu",
        "xpu|xpu|xpu:0", "' XPU:1 '|xpu:1|xpu:1"})
    void deviceIsNormalisedAsPythonsValidateDevice(String device, String normalised, String names) {
        SerializedDescriptor descriptor = new SerializedDescriptor(device, 4096, 16);
        // validate_device trims and lower-cases, nothing more; Device(str) then reads what it names
        assertThat(descriptor.device()).isEqualTo(normalised);
        assertThat(descriptor.toDevice()).hasToString(names).isEqualTo(Device.of(normalised));
        assertThat(descriptor.toJson()).isEqualTo("{\"device\":\"" + normalised + "\",\"ptr\":4096,\"size\":16}");
    }

    @ParameterizedTest
    @ValueSource(strings = {"gpu:1", "gpu", "host", "tpu", "tpu:0", "cuda:x", "cuda:-1", "cuda:", "cudax", "", "  ",
        "cpu0", "xcuda", "xpu:", "xpu:y", "Host:0"})
    void unsupportedDeviceIsRefused(String device) {
        InvalidMetadataException e = refused(device, 4096, 16);
        assertThat(e.field()).isEqualTo("device");
        assertThat(e.getMessage()).contains("must be 'cpu', 'cuda:N' or 'xpu:N'").contains("'" + device + "'");
    }

    @Test
    void nullDeviceIsRefused() {
        InvalidMetadataException e = refused(null, 4096, 16);
        assertThat(e.field()).isEqualTo("device");
        assertThat(e.getMessage()).contains("null");
    }

    @ParameterizedTest
    @ValueSource(longs = {0, -1, -4096, Long.MIN_VALUE})
    void badPointerIsRefused(long ptr) {
        InvalidMetadataException e = refused("cpu", ptr, 16);
        assertThat(e.field()).isEqualTo("ptr");
        assertThat(e.getMessage()).containsAnyOf("must not be 0", "positive address");
    }

    @ParameterizedTest
    @ValueSource(longs = {-1, Long.MIN_VALUE})
    void negativeSizeIsRefused(long size) {
        InvalidMetadataException e = refused("cpu", 4096, size);
        assertThat(e.field()).isEqualTo("size");
        assertThat(e.getMessage()).contains(">= 0").contains(String.valueOf(size));
    }

    @Test
    void extremesAreAccepted() {
        SerializedDescriptor d = new SerializedDescriptor("cuda:1", Long.MAX_VALUE, Long.MAX_VALUE);
        assertThat(d.ptr()).isEqualTo(Long.MAX_VALUE);
        assertThat(d.size()).isEqualTo(Long.MAX_VALUE);
        assertThat(new SerializedDescriptor("cpu", 1, 0).size()).isZero();
    }

    @Test
    void equalsHashCodeAndToString() {
        // pydantic models compare their field values: the normalised text, not the device it names
        SerializedDescriptor a = new SerializedDescriptor(" CUDA:0 ", 4096, 16);
        SerializedDescriptor b = new SerializedDescriptor("cuda:0", 4096, 16);
        assertThat(a).isEqualTo(b).hasSameHashCodeAs(b);
        assertThat(new SerializedDescriptor("cuda", 4096, 16)).isNotEqualTo(b);
        assertThat(a).isNotEqualTo(new SerializedDescriptor("cuda:1", 4096, 16))
                .isNotEqualTo(new SerializedDescriptor("cuda:0", 8192, 16))
                .isNotEqualTo(new SerializedDescriptor("cuda:0", 4096, 17))
                .isNotEqualTo(new SerializedDescriptor("cpu", 4096, 16))
                .isNotEqualTo(null);
        assertThat(a.toString()).contains("cuda:0").contains("4096").contains("16");
    }

    @Test
    void fromMapLocatesErrorsWithItsPrefix() {
        InvalidMetadataException e = catchThrowableOfType(InvalidMetadataException.class,
                () -> SerializedDescriptor.fromMap(Map.of("device", "cpu", "ptr", 0, "size", 1), "descriptors[4]."));
        assertThat(e.field()).isEqualTo("descriptors[4].ptr");
        e = catchThrowableOfType(InvalidMetadataException.class,
                () -> SerializedDescriptor.fromMap("cpu", "descriptors[2]."));
        assertThat(e.field()).isEqualTo("descriptors[2]");
        e = catchThrowableOfType(InvalidMetadataException.class, () -> SerializedDescriptor.fromMap(null, ""));
        assertThat(e.field()).isEqualTo("descriptor");
    }
}
