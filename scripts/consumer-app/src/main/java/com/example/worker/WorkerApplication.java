package com.example.worker;

import java.util.Map;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.context.event.ApplicationReadyEvent;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.event.EventListener;
import org.springframework.web.client.RestClient;

/**
 * The throw-away application scripts/consumer-app-test.sh builds from the pom in docs/getting-started.md: once
 * started, it reads a buffer it published (getting-started's GreetingController and GreetingClient), reads its
 * own nixl health, prints both and exits 0 — or 1 if either is wrong.
 */
@SpringBootApplication
public class WorkerApplication {

    public static void main(String[] args) {
        SpringApplication.run(WorkerApplication.class, args);
    }

    @EventListener
    void selfCheck(ApplicationReadyEvent ready) {
        ConfigurableApplicationContext context = ready.getApplicationContext();
        int port = ((WebServerApplicationContext) context).getWebServer().getPort();
        String base = "http://127.0.0.1:" + port;
        int exitCode = 1;
        try {
            String greeting = context.getBean(GreetingClient.class).fetch(base);
            Map<?, ?> health = RestClient.create(base).get().uri("/actuator/health/nixl").retrieve().body(Map.class);
            System.out.println("consumer-app: read \"" + greeting + "\"; nixl health " + health);
            if ("hello from nixl-connect".equals(greeting) && "UP".equals(health.get("status"))) {
                exitCode = 0;
            }
        } catch (RuntimeException e) {
            e.printStackTrace();
        }
        int code = exitCode;
        System.exit(SpringApplication.exit(context, () -> code));
    }
}
