package io.nixlconnect.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import io.nixlconnect.Connector;
import io.nixlconnect.cuda.Cuda;
import io.nixlconnect.cuda.CudaMemory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

/**
 * GPU support without a GPU (this module's tests have no JCuda on the classpath): no CUDA bean, one info line
 * with the reason (health: NixlConnectHealthIndicatorTests), and {@code cuda.required=true} fails start-up with a clear report.
 */
@ExtendWith(OutputCaptureExtension.class)
class NixlCudaAutoConfigurationTests {

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(NixlConnectAutoConfiguration.class, NixlCudaAutoConfiguration.class));

    @Test
    void withoutJcudaThereIsNoCudaBeanAndOneInfoLineSaysWhy(CapturedOutput output) {
        runner.run(context -> {
            assertThat(context).hasNotFailed().hasSingleBean(Connector.class).doesNotHaveBean(CudaMemory.class);
            assertThat(output).contains("nixl-connect: GPU support unavailable: " + Cuda.availability().reason())
                    .doesNotContain("Exception");
        });
    }

    @Test
    void requiredCudaWithoutAGpuFailsStartUpWithAClearReport() {
        runner.withPropertyValues("nixl.connect.cuda.required=true").run(context -> {
            assertThat(context).hasFailed();
            FailureAnalysis analysis = new NixlConnectFailureAnalyzer().analyze(context.getStartupFailure());
            assertThat(analysis).isNotNull();
            assertThat(analysis.getDescription()).startsWith("nixl.connect.cuda.required is true but no usable GPU was found")
                    .contains(Cuda.availability().reason());
            assertThat(analysis.getAction()).contains("nixl.connect.cuda.required=false");
        });
    }
}
