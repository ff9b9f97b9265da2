# One image for the control plane (`npm start`, the default) and the agent (`npm run agent`, the
# single-file build of scripts/build-agent.ts).
FROM node:20-bookworm-slim

# Agents run deployment scripts with bash or sh (in the base image) or python3.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY package.json package-lock.json ./
# Dev dependencies stay: tsx runs the control plane's TypeScript sources directly.
RUN npm ci && npm cache clean --force
COPY . .
# The dashboard is built into the image: npm start (prestart) then finds it up to date.
RUN npm run build:agent && npm run build:dashboard

# Data folders owned by the unprivileged user; named volumes mounted here inherit the ownership.
RUN mkdir -p /data /var/lib/gantry-agent && chown node:node /data /var/lib/gantry-agent
USER node
ENV GANTRY_DATA_DIR=/data \
    GANTRY_AGENT_HOME=/var/lib/gantry-agent \
    GANTRY_HOST=0.0.0.0
EXPOSE 8080 8081
# Control plane: healthy when GET /readyz answers 200 (scripts/healthcheck.mjs; agents: while running).
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 CMD ["node", "scripts/healthcheck.mjs"]
CMD ["npm", "start"]
