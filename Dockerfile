# The surface store and the project's command-line tools in one image.
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY surfacestore ./surfacestore
COPY preprocess ./preprocess
COPY simclient ./simclient
COPY sample_surfaces ./sample_surfaces
RUN pip install --no-cache-dir .
ENV SURFACESTORE_ROOT=/tables \
    SURFACESTORE_HOST=0.0.0.0 \
    SURFACESTORE_PORT=8000
EXPOSE 8000
CMD ["surfacestore", "serve"]
