package io.nixlconnect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

class DeviceTest {

    static Stream<Arguments> accepted() {
        return Stream.of(
                Arguments.of("cpu", DeviceKind.HOST, 0, "cpu"),
                Arguments.of("host", DeviceKind.HOST, 0, "cpu"),
                Arguments.of("CPU ", DeviceKind.HOST, 0, "cpu"),
                Arguments.of(" Host\t", DeviceKind.HOST, 0, "cpu"),
                Arguments.of("cuda", DeviceKind.CUDA, 0, "cuda:0"),
                Arguments.of("CUDA", DeviceKind.CUDA, 0, "cuda:0"),
                Arguments.of("cuda:0", DeviceKind.CUDA, 0, "cuda:0"),
                Arguments.of("cuda:7", DeviceKind.CUDA, 7, "cuda:7"),
                Arguments.of(" CUDA:3 ", DeviceKind.CUDA, 3, "cuda:3"),
                Arguments.of("cuda:007", DeviceKind.CUDA, 7, "cuda:7"),
                Arguments.of("cuda:99999", DeviceKind.CUDA, 99999, "cuda:99999"),
                Arguments.of("gpu", DeviceKind.CUDA, 0, "cuda:0"),
                Arguments.of("gpu:2", DeviceKind.CUDA, 2, "cuda:2"),
                Arguments.of("GPU:15", DeviceKind.CUDA, 15, "cuda:15"),
                // Python reads what follows the colon with int(): surrounding blanks and a plus sign pass
                Arguments.of("cuda: 1", DeviceKind.CUDA, 1, "cuda:1"),
                Arguments.of("cuda:+1", DeviceKind.CUDA, 1, "cuda:1"),
                // Python's Device sets the host's id to 0 whatever follows
                Arguments.of("cpu:0", DeviceKind.HOST, 0, "cpu"),
                Arguments.of("host:0", DeviceKind.HOST, 0, "cpu"),
                Arguments.of("CPU:3", DeviceKind.HOST, 0, "cpu"),
                Arguments.of("xpu", DeviceKind.XPU, 0, "xpu:0"),
                Arguments.of(" XPU:2 ", DeviceKind.XPU, 2, "xpu:2"),
                Arguments.of("xpu:0", DeviceKind.XPU, 0, "xpu:0"));
    }

    @ParameterizedTest(name = "\"{0}\" -> {3}")
    @MethodSource("accepted")
    void acceptedForms(String text, DeviceKind kind, int id, String printed) {
        for (Device device : new Device[] {Device.of(text), new Device(text)}) {
            assertThat(device.kind()).isEqualTo(kind);
            assertThat(device.id()).isEqualTo(id);
            assertThat(device.isCuda()).isEqualTo(kind == DeviceKind.CUDA);
            assertThat(device).hasToString(printed);
            assertThat(Device.of(device.toString())).isEqualTo(device);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"tpu", "tpu:0", "mps", "", " ", "cuda:", "cuda:x", "cuda:-1", "cuda 1",
        "cuda:1:2", "cudax", "cuda1", "gpu:", "gpu:-3", "cpu:x", "cpu0", "xpu:", "xpu:-1", "xpux", "cuda:1.0", "cuda:0x1",
        "cuda:\u0663", "cuda:\uff13", "cuda:2147483648", "cuda:9999999999", "cuda:1234567890", "cuda:1_0"})
    void refusedForms(String text) {
        assertThatThrownBy(() -> Device.of(text)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'" + text + "'");
        assertThatThrownBy(() -> new Device(text)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void refusedMessagesSayWhatIsExpected() {
        assertThatThrownBy(() -> Device.of("tpu")).hasMessageContaining("expected cpu, host, cuda, cuda:N, gpu, gpu:N, xpu or xpu:N");
        assertThatThrownBy(() -> Device.of("cuda:x")).hasMessageContaining("non-negative integer");
        assertThatThrownBy(() -> Device.of("cuda:-1")).hasMessageContaining("non-negative integer");
        assertThatThrownBy(() -> Device.of(null)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("null");
        assertThatThrownBy(() -> new Device((String) null)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void kindAndIdConstructor() {
        Device cuda3 = new Device(DeviceKind.CUDA, 3);
        assertThat(cuda3).hasToString("cuda:3").isEqualTo(Device.of("cuda:3")).isEqualTo(Device.cuda(3));
        assertThat(new Device(DeviceKind.HOST, 0)).isEqualTo(Device.CPU).hasToString("cpu");
        assertThat(Device.CPU.kind()).isEqualTo(DeviceKind.HOST);
        assertThat(Device.CPU.isCuda()).isFalse();
        assertThat(Device.CPU.isGpu()).isFalse();
        Device xpu1 = Device.xpu(1);
        assertThat(xpu1).hasToString("xpu:1").isEqualTo(new Device(DeviceKind.XPU, 1)).isNotEqualTo(Device.cuda(1));
        assertThat(xpu1.isGpu()).isTrue();
        assertThat(xpu1.isCuda()).isFalse();
        assertThat(Device.cuda(0).isGpu()).isTrue();
    }

    @Test
    void kindAndIdConstructorRefusesNonsense() {
        assertThatThrownBy(() -> new Device(DeviceKind.HOST, 1)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("host device has no id");
        assertThatThrownBy(() -> new Device(DeviceKind.CUDA, -1)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(">= 0");
        assertThatThrownBy(() -> new Device(DeviceKind.UNSPECIFIED, 0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("HOST, CUDA or XPU");
        assertThatThrownBy(() -> new Device((DeviceKind) null, 0)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> Device.cuda(-2)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void equalsAndHashCode() {
        Device a = Device.of("cuda:1");
        Device b = new Device(DeviceKind.CUDA, 1);
        Device c = Device.of("gpu:1");
        assertThat(a).isEqualTo(b).isEqualTo(c).hasSameHashCodeAs(b).hasSameHashCodeAs(c);
        assertThat(a).isNotEqualTo(Device.cuda(2)).isNotEqualTo(Device.CPU).isNotEqualTo("cuda:1").isNotEqualTo(null);
        assertThat(Device.of("cuda")).isEqualTo(Device.cuda(0)).isNotEqualTo(Device.CPU);
        assertThat(Device.of("host")).isEqualTo(Device.of("cpu")).hasSameHashCodeAs(Device.CPU);
        assertThat(a).isEqualTo(a);
    }
}
