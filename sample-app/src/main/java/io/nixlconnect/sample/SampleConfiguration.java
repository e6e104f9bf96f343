package io.nixlconnect.sample;

import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

@Configuration(proxyBeanMethods = false)
class SampleConfiguration {

    /** Host memory unless the application declares another {@link TensorMemory} (the GPU seam). */
    @Bean
    @ConditionalOnMissingBean
    TensorMemory tensorMemory(SampleProperties properties) {
        if (!"cpu".equalsIgnoreCase(properties.getDevice())) {
            throw new IllegalStateException("sample.device=" + properties.getDevice()
                    + " is not supported yet: the sample allocates host memory ('cpu') only. GPU tensors need a"
                    + " TensorMemory bean for that device (see TensorMemory).");
        }
        return new HostTensorMemory();
    }
}
