# The skewless worker image (docker-compose.yml builds it). Two stages: the build compiles the whole
# project with its own build script; the runtime holds the compiled product, production dependencies
# only, and runs as the unprivileged `node` user. test/deploy/compose.test.ts checks that every COPY
# source exists and is not excluded by .dockerignore, that the build runs package.json's scripts, and
# that the CMD is a file `npm run build` produces, with everything it imports copied into the runtime.
ARG NODE_IMAGE=node:20.20.2-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /src
# Dependencies first, so a source change does not reinstall them. --ignore-scripts: the project's
# `prepare` would compile before the sources are here; no dependency needs an install script to work.
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
# Everything tsconfig.json includes: the build type-checks the tests and the simulation too.
COPY tsconfig.json ./
COPY rules ./rules
COPY contracts ./contracts
COPY workflows ./workflows
COPY activities ./activities
COPY worker ./worker
COPY client ./client
COPY tooling ./tooling
COPY test ./test
COPY demo ./demo
COPY sim ./sim
COPY bench ./bench
COPY stack ./stack
RUN npm run build

FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
# V8's heap limit. Without one V8 lets garbage pile up towards its default limit (a quarter of the
# machine's memory): 625 MiB of RSS at 1,000 nodes for ~85 MiB of live heap. The workflow cache is
# sized on its own (worker/create-worker.ts WORKFLOW_CACHE_SIZE), not from this limit.
ENV NODE_OPTIONS=--max-old-space-size=256
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force
# The product only: no tests, no simulation, no demo.
COPY --from=build /src/dist/rules ./dist/rules
COPY --from=build /src/dist/contracts ./dist/contracts
COPY --from=build /src/dist/workflows ./dist/workflows
COPY --from=build /src/dist/activities ./dist/activities
COPY --from=build /src/dist/worker ./dist/worker
COPY --from=build /src/dist/workflow-bundle.js ./dist/workflow-bundle.js
COPY --from=build /src/dist/client ./dist/client
COPY --from=build /src/dist/tooling ./dist/tooling
# `skewless` on the PATH too (docker compose exec worker skewless status NAME).
COPY bin/skewless.js ./bin/skewless.js
RUN ln -s /app/bin/skewless.js /usr/local/bin/skewless \
 && mkdir -p /etc/skewless/clusters /var/lib/skewless/snapshots \
 && chown node:node /var/lib/skewless/snapshots
USER node
# The snapshot copies: a volume, so they outlive the container.
VOLUME ["/var/lib/skewless/snapshots"]
EXPOSE 9464
# Reads its settings from the environment only (worker/config.ts): TEMPORAL_*, SKEWLESS_*.
CMD ["node", "dist/worker/main.js"]
