"""PySpark replay pipeline: seeded random walks of the model at scale.

``spark.session``  one quiet SparkSession factory (local by default, any ``--master``);
``spark.replay``   the pipeline: (seed, variant) rows -> runs on executors -> Parquet, summary,
                   shrunk counterexamples;
``spark.standin``  a small synthetic engine with the same interface as ``properties.engines``
                   (fast, deterministic; used by the pipeline's own tests and ``bench --standin``).

Importing this package does not import pyspark; the submodules do.
"""
