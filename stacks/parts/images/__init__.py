"""The server images: the g5g image's build, the ECR pull grant, the SageMaker image pinned by digest."""
