package io.nixlconnect.sample;

import io.micrometer.core.instrument.MeterRegistry;
import io.nixlconnect.Connector;
import io.nixlconnect.cuda.CudaMemory;
import java.util.Locale;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.condition.ConditionalOnExpression;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;

@Configuration(proxyBeanMethods = false)
class SampleConfiguration {

    /**
     * The consumer's connector: the application's in role {@code consumer}; in role {@code both} one of its own, since
     * NIXL does not let a connector read its own readables ({@link ConsumerConnector}). Closed with the context.
     */
    @Bean
    @ConditionalOnExpression(DemoClient.CONSUMER_ROLE)
    ConsumerConnector consumerConnector(Connector connector, SampleProperties properties,
            ObjectProvider<MeterRegistry> registry) {
        return properties.getRole() == SampleProperties.Role.BOTH
                ? ConsumerConnector.beside(connector, registry.getIfAvailable())
                : ConsumerConnector.shared(connector);
    }

    /**
     * Where tensors live: {@code sample.device=auto} (the default) takes the GPU when the starter found one
     * (a {@link CudaMemory} bean) and host memory otherwise; {@code cpu} and {@code cuda} force one.
     */
    @Bean
    @ConditionalOnMissingBean
    TensorMemory tensorMemory(SampleProperties properties, ObjectProvider<CudaMemory> cuda, Environment environment) {
        String device = properties.getDevice().trim().toLowerCase(Locale.ROOT);
        CudaMemory gpu = cuda.getIfAvailable();
        int deviceId = environment.getProperty("nixl.connect.cuda.device-id", Integer.class, 0);
        return switch (device) {
            case "cpu" -> new HostTensorMemory();
            case "auto" -> gpu != null ? new CudaTensorMemory(gpu, deviceId) : new HostTensorMemory();
            case "cuda" -> {
                if (gpu == null) {
                    throw new IllegalStateException("sample.device=cuda but no usable GPU was found (see the"
                            + " 'GPU support unavailable' line above); use sample.device=auto or cpu");
                }
                yield new CudaTensorMemory(gpu, deviceId);
            }
            default -> throw new IllegalStateException("sample.device=" + properties.getDevice()
                    + " is not one of auto, cpu, cuda (the GPU is chosen with nixl.connect.cuda.device-id)");
        };
    }
}
