package io.nixlconnect.autoconfigure;

import io.nixlconnect.cuda.Cuda;
import io.nixlconnect.cuda.CudaAvailability;
import io.nixlconnect.cuda.CudaMemory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionOutcome;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.SpringBootCondition;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.context.annotation.Conditional;
import org.springframework.core.type.AnnotatedTypeMetadata;

/**
 * GPU memory through JCuda: a {@link CudaMemory} bean (device discovery, device and pinned buffers, copies)
 * when JCuda is on the classpath and the configured device ({@code nixl.connect.cuda.device-id}) is usable.
 */
@AutoConfiguration(after = NixlConnectAutoConfiguration.class)
@ConditionalOnClass(name = "jcuda.driver.JCudaDriver")
@ConditionalOnBooleanProperty(name = "nixl.connect.enabled", matchIfMissing = true)
public final class NixlCudaAutoConfiguration {

    @Bean
    @ConditionalOnMissingBean
    @Conditional(OnCudaDeviceCondition.class)
    CudaMemory nixlCudaMemory() {
        return Cuda.open();
    }

    /** Matches when the configured CUDA device can be used; the report says why not otherwise. */
    static final class OnCudaDeviceCondition extends SpringBootCondition {

        @Override
        public ConditionOutcome getMatchOutcome(ConditionContext context, AnnotatedTypeMetadata metadata) {
            int deviceId = context.getEnvironment().getProperty("nixl.connect.cuda.device-id", Integer.class, 0);
            CudaAvailability availability = Cuda.availability(deviceId);
            return availability.available()
                    ? ConditionOutcome.match("CUDA device " + deviceId + " is usable")
                    : ConditionOutcome.noMatch("GPU support unavailable: " + availability.reason());
        }
    }
}
